// Saved settings per chain: what was set over the socket, written to
// `$XDG_STATE_HOME/hear/<chain>.conf` (HearControl/Settings.swift format) so that a PipeWire
// restart or a reboot keeps the user's tuning. Used only on the control server's thread.
// Writes are debounced and atomic (temporary file, fsync, rename); a corrupt file is reported
// and ignored, never fatal.

import Glibc
import HearControl
import HearDSP

final class StateStore {
    let directory: String?
    /// After the last change, wait this long before writing (a slider drag is one write).
    let debounce: Double
    private var loaded: [Int: Settings] = [:]
    private var dirty: Set<Int> = []
    private(set) var deadline: Double?
    /// Problems worth telling the user about (`hearctl status` prints them).
    private(set) var notices: [String] = []

    init(directory: String?, debounce: Double = 0.25) {
        self.directory = directory
        self.debounce = debounce
        if directory == nil { notices.append("settings are not saved: neither XDG_STATE_HOME nor HOME is set") }
    }

    func path(chain: Int) -> String? { directory.map { $0 + "/" + SettingsPath.stateFileName(chain: chain) } }

    /// The saved settings of a chain (read from its file the first time).
    func settings(chain: Int) -> Settings {
        if let settings = loaded[chain] { return settings }
        var settings = Settings()
        if let path = path(chain: chain) {
            do {
                if let bytes = try Syscall.readFile(path, limit: 1 << 16) {
                    switch Settings.parse(String(decoding: bytes, as: UTF8.self)) {
                    case .success(let parsed): settings = parsed
                    case .failure(let error): report("ignoring corrupt state file \(path): \(error.message)")
                    }
                }
            } catch {
                report("ignoring unreadable state file \(path): \(error)")
            }
        }
        loaded[chain] = settings
        return settings
    }

    func update(chain: Int, _ change: (inout Settings) -> Void, now: Double) {
        var settings = self.settings(chain: chain)
        change(&settings)
        loaded[chain] = settings
        dirty.insert(chain)
        deadline = now + debounce
    }

    /// Writes changed chains once the debounce time has passed (or at once when `force`).
    func flush(now: Double, force: Bool = false) {
        guard let deadline, force || now >= deadline else { return }
        self.deadline = nil
        guard let directory else { dirty.removeAll(); return }
        for chain in dirty.sorted() {
            guard let path = path(chain: chain), let settings = loaded[chain] else { continue }
            do {
                try Syscall.makeDirectories(directory, mode: 0o700)
                let text = settings.text(comment: "hear settings for chain \(chain) (\(ChainName.name(chain))), saved by the control server.\nEdit with hearctl; a file that does not parse is ignored.")
                try Syscall.writeFileAtomically(path, directory: directory, bytes: Array(text.utf8))
            } catch {
                report("could not save settings to \(path): \(error)")
            }
        }
        dirty.removeAll()
    }

    func report(_ notice: String) {
        // The host's log (PipeWire's journal) gets it too.
        Syscall.log(notice)
        notices.append(notice)
        if notices.count > 8 { notices.removeFirst(notices.count - 8) }
    }
}
