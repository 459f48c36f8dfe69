// The real-time guarantees (@_noLocks on every entry point of the audio path) are checked by the
// compiler only with whole-module optimization: without it every call into another file reads as
// unknown code, and the check fails by the hundred. A debug build gets this one line instead.
#if DEBUG
#error("hear builds in release only: `make` (or `swift build -c release`), `make test` for the tests")
#endif
