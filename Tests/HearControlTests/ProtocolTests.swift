import HearControl
import HearDSP
import Testing
import TestSupport

@Suite struct RequestCodecTests {
    @Test func requestsRoundTripThroughTheirLines() throws {
        let requests: [Request] = [
            .ping, .status,
            .get(chain: nil, parameters: []), .get(chain: 1, parameters: [.gain, .compRatio]),
            .set(chain: nil, assignments: [Assignment(.gain, 6)]),
            .set(chain: 2, assignments: [Assignment(.compRatio, 3), Assignment(.compThreshold, -30.5), Assignment(.bypass, 1)]),
            .reset(chain: nil, parameters: []), .reset(chain: 999, parameters: [.eqPeak3Gain]),
            .step(chain: nil, steps: [Assignment(.gain, 0.01)]), .step(chain: 1, steps: [Assignment(.gain, -2), Assignment(.compThreshold, 48)]),
        ]
        for request in requests {
            #expect(Request.parse(Array(request.line.utf8)) == .success(request), "\(request.line)")
        }
    }

    @Test func everyParameterValueRoundTripsExactly() throws {
        var random = SeededRandom(seed: 1)
        for parameter in Parameter.allCases {
            let spec = parameter.spec
            for _ in 0..<200 {
                var value = spec.minimum + Float(random.unit()) * (spec.maximum - spec.minimum)
                if spec.scale == .toggle { value = value >= 0.5 ? 1 : 0 }
                let request = Request.set(chain: nil, assignments: [Assignment(parameter, value)])
                guard case .success(.set(_, let back)) = Request.parse(Array(request.line.utf8)) else {
                    Issue.record("\(request.line) did not parse"); continue
                }
                #expect(back.first?.value.bitPattern == value.bitPattern, "\(request.line)")
            }
        }
    }

    @Test func valuesAcceptUnitsAndSwitchWords() {
        #expect(ParameterValue.parse("6", for: .gain) == .success(6))
        #expect(ParameterValue.parse("6dB", for: .gain) == .success(6))
        #expect(ParameterValue.parse("6 db", for: .gain) == .success(6))
        #expect(ParameterValue.parse("-30dB", for: .compThreshold) == .success(-30))
        #expect(ParameterValue.parse("3:1", for: .compRatio) == .success(3))
        #expect(ParameterValue.parse("250Hz", for: .eqLowShelfFrequency) == .success(250))
        #expect(ParameterValue.parse("on", for: .bypass) == .success(1))
        #expect(ParameterValue.parse("off", for: .bypass) == .success(0))
    }

    @Test func theNoiseSuppressorModeIsNamed() throws {
        #expect(ParameterValue.parse("learned", for: .nsMode) == .success(1))
        #expect(ParameterValue.parse("Classical", for: .nsMode) == .success(0))
        #expect(ParameterValue.parse("1", for: .nsMode) == .success(1))
        #expect(ParameterValue.describe(1, for: .nsMode) == "learned")
        #expect(ParameterValue.describe(0, for: .nsMode) == "classical")
        guard case .failure(let error) = ParameterValue.parse("on", for: .nsMode) else { Issue.record("accepted on"); return }
        #expect(error.code == .badValue)
        #expect(error.message == "ns.mode is classical or learned (or 0 or 1), not 'on'")
    }

    @Test func outOfRangeStatesTheRange() throws {
        guard case .failure(let error) = ParameterValue.parse("30", for: .gain) else { Issue.record("accepted 30 dB"); return }
        #expect(error.code == .outOfRange)
        #expect(error.message == "gain must be between -24 dB and 24 dB; got 30 dB")
    }

    @Test func unknownParametersNameTheClosestKeys() throws {
        guard case .failure(let error) = ParameterKey.parse("gian") else { Issue.record("accepted gian"); return }
        #expect(error.code == .unknownParameter)
        #expect(error.message.contains("did you mean gain"))
        #expect(ParameterKey.closest(to: "ratio").contains("comp.ratio"))
        #expect(ParameterKey.closest(to: "comp.treshold").first == "comp.threshold")
        #expect(ParameterKey.closest(to: "zzzzzzzz").isEmpty)
    }

    @Test(arguments: [
        ("", ErrorCode.badRequest), ("frobnicate", .unknownVerb), ("SET gain 6", .unknownVerb),
        ("set", .badRequest), ("set gain", .badRequest), ("set gain 6 comp.ratio", .badRequest),
        ("set gain nan", .badValue), ("set gain NaN", .badValue), ("set gain inf", .badValue), ("set gain -inf", .badValue),
        ("set gain 1e39", .badValue), ("set gain 0x10", .badValue), ("set gain six", .badValue), ("set gain 6dBFS", .badValue),
        ("set gain 25", .outOfRange), ("set comp.ratio 0.5", .outOfRange), ("set bypass 2", .badValue),
        ("set nope 1", .unknownParameter), ("get nope", .unknownParameter), ("reset nope", .unknownParameter),
        ("set chain=x gain 1", .badRequest), ("get chain=-1", .badRequest), ("get chain=1000", .badRequest),
        ("ping now", .badRequest), ("status all", .badRequest),
        ("step", .badRequest), ("step gain", .badRequest), ("step gain 49", .outOfRange), ("step gain -49", .outOfRange),
        ("step bypass +1", .badValue), ("step gain +2Hz", .badValue), ("step gain nan", .badValue),
        ("set gain 6\u{0}", .badRequest), ("\u{0}", .badRequest), ("set gain\u{1B}[2J 6", .badRequest),
    ])
    func malformedRequestsAreErrors(line: String, code: ErrorCode) {
        switch Request.parse(Array(line.utf8)) {
        case .success(let request): Issue.record("'\(line)' parsed as \(request)")
        case .failure(let error):
            #expect(error.code == code, "'\(line)': \(error.message)")
            #expect(!error.message.isEmpty)
        }
    }

    /// A step is signed on the wire, and any size up to the whole range, also one that is no value
    /// of the range (comp.ratio runs from 1:1 to 16:1; a step of -3 is fine).
    @Test func stepsAreSignedAndBoundedByTheRange() throws {
        #expect(Request.step(chain: 2, steps: [Assignment(.gain, 2), Assignment(.compRatio, -0.5)]).line == "step chain=2 gain +2 comp.ratio -0.5")
        #expect(Request.parse(Array("step gain 48".utf8)) == .success(.step(chain: nil, steps: [Assignment(.gain, 48)])))
        #expect(Request.parse(Array("step comp.ratio -3:1".utf8)) == .success(.step(chain: nil, steps: [Assignment(.compRatio, -3)])))
    }

    @Test func aLineOfOneMegabyteIsTooLong() {
        let line = [UInt8]("set gain ".utf8) + [UInt8](repeating: 0x36, count: 1 << 20)
        guard case .failure(let error) = Request.parse(line) else { Issue.record("accepted"); return }
        #expect(error.code == .tooLong)
    }

    @Test func invalidUTF8IsAnError() {
        guard case .failure(let error) = Request.parse([0x73, 0x65, 0x74, 0x20, 0xFF, 0xFE]) else { Issue.record("accepted"); return }
        #expect(error.code == .badRequest)
    }

    /// Random bytes: every line is an error (none of them is a valid request by chance), and the
    /// parser neither crashes nor hangs.
    @Test func fuzzedRandomBytesAreAllErrors() {
        var random = SeededRandom(seed: 42)
        var errors = 0
        for _ in 0..<20_000 {
            let length = Int(random.next() % 300)
            let line = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }.filter { $0 != 0x0A }
            if case .failure = Request.parse(line) { errors += 1 }
        }
        #expect(errors == 20_000)
    }

    /// Mutations of valid requests: whatever parses re-encodes to a line that parses to the same request.
    @Test func fuzzedMutationsNeverYieldNonFiniteOrOutOfRangeValues() {
        var random = SeededRandom(seed: 7)
        let seeds = ["set gain 6", "set chain=1 comp.ratio 3 gain -2.5", "get gain", "reset chain=2 eq.low.gain", "status"]
        let alphabet = Array("0123456789.-+eEnaifxNAI dB:=chain".utf8)
        for _ in 0..<20_000 {
            var bytes = Array(seeds[Int(random.next() % UInt64(seeds.count))].utf8)
            for _ in 0..<Int(1 + random.next() % 4) {
                let position = Int(random.next() % UInt64(bytes.count + 1))
                let byte = alphabet[Int(random.next() % UInt64(alphabet.count))]
                switch random.next() % 3 {
                case 0: bytes.insert(byte, at: position)
                case 1: if position < bytes.count { bytes[position] = byte }
                default: if position < bytes.count { bytes.remove(at: position) }
                }
            }
            guard case .success(let request) = Request.parse(bytes) else { continue }
            if case .set(_, let assignments) = request {
                for assignment in assignments {
                    let spec = assignment.parameter.spec
                    #expect(assignment.value.isFinite && assignment.value >= spec.minimum && assignment.value <= spec.maximum,
                            "\(String(decoding: bytes, as: UTF8.self))")
                }
            }
            #expect(Request.parse(Array(request.line.utf8)) == .success(request))
        }
    }
}

@Suite struct ReplyCodecTests {
    @Test func replyLinesRoundTrip() {
        let lines: [ReplyLine] = [
            .ok([]), .ok([("instances", "2")]), .notice("ignoring corrupt state file /x: line 3: expected 'key = value'"),
            .error(ProtocolError(.outOfRange, "gain must be between -24 dB and 24 dB; got 30 dB")),
            .record(ValueRecord(chain: 1, parameter: .compRatio, value: 3.5).record),
        ]
        for line in lines { #expect(ReplyLine.parse(line.line) == line, "\(line.line)") }
    }

    @Test func instanceStatusRoundTrips() throws {
        let status = InstanceStatus(id: 3, chain: 2, label: "hear_stereo", sampleRate: 48000, channels: 2, latency: 48, uptime: 12.5,
                                    bypassed: true,
                                    meters: MeterReadings([.inputPeak: -12.5, .inputRMS: -20, .outputPeak: -1, .outputRMS: -.infinity,
                                                           .compressorReduction: 3.5, .limiterReduction: 0, .noiseFloor: nil,
                                                           .speechProbability: 0.5]),
                                    running: false, faults: 2, block: 2048)
        let line = ReplyLine.record(status.record).line
        #expect(line.hasSuffix(" faults=2"))
        #expect(line.hasPrefix("instance id=3 chain=2 name=speaker label=hear_stereo rate=48000 channels=2 latency=48 block=2048 uptime=12.5 state=idle bypass=on"))
        guard case .record(let record) = ReplyLine.parse(line) else { Issue.record("not a record: \(line)"); return }
        #expect(InstanceStatus(record) == status)
    }

    @Test func greetingRoundTrips() {
        #expect(Greeting(pid: 1234).line == "hear/1 pid=1234")
        #expect(Greeting.parse("hear/1 pid=1234") == Greeting(pid: 1234))
        #expect(Greeting.parse("hear/2 pid=9")?.version == 2)
        #expect(Greeting.parse("SSH-2.0-OpenSSH") == nil)
    }
}

@Suite struct SettingsTests {
    @Test func settingsTextRoundTrips() {
        let settings = Settings([Assignment(.gain, 6), Assignment(.compRatio, 3), Assignment(.eqPeak1Q, 0.7)])
        let text = settings.text(comment: "test")
        #expect(text == "# test\ngain = 6\neq.peak1.q = 0.7\ncomp.ratio = 3\n")
        let (parsed, errors) = Settings.parseTolerant(text)
        #expect(parsed == settings)
        #expect(errors.isEmpty)
    }

    @Test(arguments: ["gain 6", "gain = loud", "gain = 99", "volume = 3", "gain = nan", "= 3"])
    func corruptLinesAreReportedWithTheirNumberAndTheRestKept(line: String) {
        let (parsed, errors) = Settings.parseTolerant("# ok\ngain = 1\n\(line)\ncomp.ratio = 3\n")
        #expect(errors.count == 1)
        #expect(errors.first?.message.hasPrefix("line 3: ") == true, "\(errors)")
        #expect(parsed == Settings([Assignment(.gain, 1), Assignment(.compRatio, 3)]))
    }
}

@Suite struct PathTests {
    @Test func socketDirectoryFollowsTheRules() {
        func directory(_ env: [String: String]) -> String { SocketPath.directory(environment: { env[$0] }, uid: 1000) }
        #expect(directory(["HEAR_RUNTIME_DIR": "/x/y/", "XDG_RUNTIME_DIR": "/run/user/1000"]) == "/x/y")
        #expect(directory(["XDG_RUNTIME_DIR": "/run/user/1000"]) == "/run/user/1000/hear")
        #expect(directory(["XDG_RUNTIME_DIR": "relative"]) == "/tmp/hear-1000")
        // A relative HEAR_RUNTIME_DIR would be created relative to PipeWire's working directory (/).
        #expect(directory(["HEAR_RUNTIME_DIR": "relhear", "XDG_RUNTIME_DIR": "/run/user/1000"]) == "/run/user/1000/hear")
        #expect(SocketPath.ignoredSetting(environment: { ["HEAR_RUNTIME_DIR": "relhear"][$0] }, uid: 1000)
            == "HEAR_RUNTIME_DIR=relhear is not an absolute path; ignored, using /tmp/hear-1000")
        #expect(SocketPath.ignoredSetting(environment: { ["HEAR_RUNTIME_DIR": "/x"][$0] }, uid: 1000) == nil)
        #expect(directory([:]) == "/tmp/hear-1000")
    }

    @Test func socketNamesCarryThePid() {
        #expect(SocketPath.socketName(pid: 42) == "hear-42.sock")
        #expect(SocketPath.pid(socketName: "hear-42.sock") == 42)
        #expect(SocketPath.pid(socketName: "hear-.sock") == nil)
        #expect(SocketPath.pid(socketName: "hear-4x2.sock") == nil)
        #expect(SocketPath.pid(socketName: "other.sock") == nil)
    }

    @Test func stateDirectoryAndFileNames() {
        #expect(SettingsPath.stateDirectory(environment: { ["XDG_STATE_HOME": "/s"][$0] }) == "/s/hear")
        #expect(SettingsPath.stateDirectory(environment: { ["HOME": "/home/a"][$0] }) == "/home/a/.local/state/hear")
        #expect(SettingsPath.stateDirectory(environment: { _ in nil }) == nil)
        #expect(SettingsPath.stateFileName(chain: 1) == "mic.conf")
        #expect(SettingsPath.stateFileName(chain: 7) == "chain7.conf")
    }

    @Test func chainNamesAndNumbers() {
        #expect(ChainName.number("mic") == 1)
        #expect(ChainName.number("speaker") == 2)
        #expect(ChainName.number("0") == 0)
        #expect(ChainName.number("chain7") == 7)
        #expect(ChainName.number("7") == 7)
        #expect(ChainName.number("-1") == nil)
        #expect(ChainName.number("1000") == nil)
        #expect(ChainName.number(port: .nan) == 0)
        #expect(ChainName.number(port: 1.4) == 1)
        #expect(ChainName.number(port: 2.6) == 3)
        #expect(ChainName.number(port: 1e9) == 999)
        #expect(ChainName.number(port: -5) == 0)
    }
}

