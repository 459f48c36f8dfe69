// The hearing test's answers from the keyboard.

import Foundation
import Glibc

/// The terminal's keys one at a time, without echo, for the test's answers.
final class TerminalKeys {
    private var saved = termios()

    init() {
        tcgetattr(STDIN_FILENO, &saved)
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG)
        tcsetattr(STDIN_FILENO, TCSANOW, &raw)
    }

    func restore() { tcsetattr(STDIN_FILENO, TCSANOW, &saved) }

    /// Drops keys pressed before the tone (answers on rhythm or held keys).
    func discard() { tcflush(STDIN_FILENO, TCIFLUSH) }

    /// True for space within `seconds`, false when none came; nil for q, Esc or Ctrl-C.
    func answer(within seconds: Double) -> Bool? {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return false }
            var poller = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(left * 1000) + 1) > 0 else { continue }
            var byte: UInt8 = 0
            guard read(STDIN_FILENO, &byte, 1) == 1 else { return nil }
            switch byte {
            case UInt8(ascii: " "): return true
            case UInt8(ascii: "q"), 27, 3: return nil
            default: continue
            }
        }
    }

    /// Waits for Enter (true), p (false: play the sample again) or q / end of input (nil) in the
    /// terminal's normal mode.
    static func waitForEnter() -> Bool? {
        guard let line = readLine() else { return nil }
        switch line.trimmingCharacters(in: .whitespaces).lowercased() {
        case "q": return nil
        case "p": return false
        default: return true
        }
    }
}
