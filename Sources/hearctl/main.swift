// Entry point: the exit statuses of ExitStatus (Client.swift; `hearctl --help`): 0 success,
// 1 error, 2 usage (ArgumentParser's own default for those is 64), 3 not running, 4 timeout.

import ArgumentParser
import Foundation

func fail(_ message: String, code: Int32) -> Never {
    FileHandle.standardError.write(Data("hearctl: \(message)\n".utf8))
    exit(code)
}

do {
    var command = try Hearctl.parseAsRoot()
    try command.run()
} catch let error as CLIError {
    fail(error.description, code: error.code)
} catch let error as ServerError {
    fail(error.description, code: 1)
} catch {
    let code = Hearctl.exitCode(for: error)
    if code == .validationFailure {
        FileHandle.standardError.write(Data((Hearctl.fullMessage(for: error) + "\n").utf8))
        exit(ExitStatus.usage)
    }
    if code == .success { Hearctl.exit(withError: error) }  // --help, --version, completion scripts
    if let exitCode = error as? ExitCode { exit(exitCode.rawValue == 0 ? 0 : 1) }
    fail(Hearctl.message(for: error), code: 1)
}
