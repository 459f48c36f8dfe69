// Entry point: the exit statuses of ExitStatus (Client.swift; `hearctl --help`): 0 success,
// 1 error, 2 usage (ArgumentParser's own default for those is 64), 3 not running, 4 timeout.

import ArgumentParser
import Foundation

/// `--json` anywhere before a `--`: failures are then answered in JSON on stdout as well.
let jsonRequested = CommandLine.arguments.dropFirst().prefix { $0 != "--" }.contains("--json")

struct ErrorReply: Encodable {
    let error: String
    let exit: Int32
}

/// The message on stderr for people; with --json also `{"error": ..., "exit": N}` on stdout for
/// scripts, which then never parse an empty output.
func fail(_ message: String, code: Int32, usage: String? = nil) -> Never {
    FileHandle.standardError.write(Data(((usage ?? "hearctl: \(message)") + "\n").utf8))
    if jsonRequested { Output.json(ErrorReply(error: message, exit: code)) }
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
        fail(Hearctl.message(for: error), code: ExitStatus.usage, usage: Hearctl.fullMessage(for: error))
    }
    if code == .success { Hearctl.exit(withError: error) }  // --help, --version, completion scripts
    if let exitCode = error as? ExitCode { exit(exitCode.rawValue == 0 ? 0 : 1) }
    fail(Hearctl.message(for: error), code: 1)
}
