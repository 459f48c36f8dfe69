// The chains a PipeWire drop-in configures, read with libspa's SPA-JSON tokenizer (HearctlCore/DropIns.swift).

import Foundation
import HearctlCore
import HearControl
import HearDSP
import Testing

@Suite struct DropInTests {
    static var root: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    }

    @Test func theRepositorysDropInsNameTheirChainsAndValues() throws {
        let microphone = try String(contentsOfFile: Self.root + "/conf.d/pipewire/hear-microphone.conf", encoding: .utf8)
        let chains = try DropIns.chains(in: microphone, path: "hear-microphone.conf")
        #expect(chains.count == 1)
        let mic = try #require(chains.first)
        #expect(mic.chain == 1 && mic.label == "hear_mono" && mic.description == "Hear: enhanced microphone")
        #expect(mic.settings[.eqHighPassFrequency] == 100 && mic.settings[.compRatio] == 3 && mic.settings[.nsReduction] == 25)
        #expect(mic.settings[.gain] == nil)
        #expect(mic.configured(.gain) == 0 && mic.configured(.compThreshold) == -28)

        let speaker = try String(contentsOfFile: Self.root + "/conf.d/pipewire/hear-speaker.conf", encoding: .utf8)
        let second = try #require(try DropIns.chains(in: speaker, path: "hear-speaker.conf").first)
        #expect(second.chain == 2 && second.label == "hear_stereo" && second.settings[.compRatio] == 2.5)
    }

    @Test func spaJSONFormsAndOtherPluginsAreHandled() throws {
        let text = """
            # a comment { not a brace
            context.modules = [
              { name = libpipewire-module-filter-chain, args = { "node.description": "two"
                  filter.graph = { nodes = [
                    { type = ladspa, name = eq, plugin = /usr/lib/ladspa/caps.so, label = Eq10, control = { "chain" = 5 } }
                    { type: ladspa name: h plugin: "/opt/x/libhear.so" label: custom
                      control: { "chain": 7.0, "gain": 30, "comp.ratio": 2, "nonsense": 1, "eq.enable": false } }
                  ] } } }
            ]
            """
        let chains = try DropIns.chains(in: text, path: "x.conf")
        #expect(chains.count == 1)
        #expect(chains.first?.chain == 7 && chains.first?.description == "two")
        #expect(chains.first?.settings[.gain] == 24)  // clamped into the schema range, as the plugin does
        #expect(chains.first?.settings[.compRatio] == 2 && chains.first?.settings[.eqEnable] == 0)
        #expect(throws: DropIns.Unreadable(reason: "not PipeWire's SPA-JSON")) { try DropIns.chains(in: "context.modules = [ { broken", path: "y.conf") }
        let noChain = try DropIns.chains(in: "n = [ { type = ladspa label = hear_mono plugin = a } ]", path: "z.conf")
        #expect(noChain.first?.chain == 0)
    }

    @Test func nestingCommentsAndBareKeysReadAsPipeWireReadsThem() throws {
        // A whole file in braces; bare keys with dots, `=`, `:` and nothing between key and value;
        // a `#` inside a quoted string is text, one outside starts a comment (with brackets in it);
        // escapes in quoted strings; a quoted number is text to filter-chain, so it sets nothing.
        let text = #"""
            { context.modules = [ # the filter-chains { [ ignored
                { name = libpipewire-module-filter-chain
                  args = { node.description = "Hear \"one\" # not a comment"
                    filter.graph = { nodes = [ { type=ladspa name=h label=hear_stereo plugin=libhear
                        control = { chain=3 gain:-6 # the level ]
                                    "comp.ratio" "4" eq.enable = 0 } } ] }
                    playback.props = { node.description = "other" } } }
                { name = libpipewire-module-filter-chain
                  args = { filter.graph = { nodes = [
                    { type = ladspa label = hear_mono plugin = libhear control = { chain = 4 } } ] } } }
            ] }
            """#
        let chains = try DropIns.chains(in: text, path: "n.conf")
        #expect(chains.map(\.chain) == [3, 4])
        let first = try #require(chains.first)
        #expect(first.label == "hear_stereo" && first.description == #"Hear "one" # not a comment"#)
        #expect(first.settings[.gain] == -6 && first.settings[.eqEnable] == 0)
        #expect(first.settings[.compRatio] == nil)
        #expect(chains.last?.description == nil && chains.last?.label == "hear_mono")
        // What libspa's tokenizer refuses makes the file unreadable: a control character inside a
        // string, a string never closed. A file in braces is one object: nothing may follow it.
        #expect(try DropIns.chains(in: "a = [ { type = ladspa label = hear_mono control = { chain = 1 } } ]", path: "ok.conf").count == 1)
        #expect(throws: DropIns.Unreadable(reason: "not PipeWire's SPA-JSON")) { try DropIns.chains(in: "a = [ { type = ladspa label = \"hear\tmono\" control = { chain = 1 } } ]", path: "t.conf") }
        #expect(throws: DropIns.Unreadable(reason: "not PipeWire's SPA-JSON")) { try DropIns.chains(in: "a = [ { type = ladspa label = \"hear_mono control = { chain = 1 } } ]", path: "q.conf") }
        #expect(throws: DropIns.Unreadable(reason: "not PipeWire's SPA-JSON")) { try DropIns.chains(in: "{ a = [ { type = ladspa label = hear_mono } ] } b = 1", path: "b.conf") }
    }

    @Test func outOfRangeValuesAreHeldWhereThePluginHoldsThem() throws {
        // filter-chain reads 1e39 as +inf and the plugin holds its port in range: +24 dB runs, so
        // that is the value `reset` returns to. A switch snaps as the plugin snaps it.
        let text = "m = [ { type = ladspa label = hear_mono control = { gain = 1e39 comp.makeup = -1e39 eq.enable = 0.7 comp.enable = 0.2 } } ]"
        let chain = try #require(try DropIns.chains(in: text, path: "r.conf").first)
        #expect(chain.settings[.gain] == 24 && chain.configured(.gain) == 24)
        #expect(chain.settings[.compMakeup] == Parameter.compMakeup.spec.minimum)
        #expect(chain.settings[.eqEnable] == 1 && chain.settings[.compEnable] == 0)
    }

    @Test func dropInsAreReadWherePipeWireReadsThem() {
        let user = DropIns.directories { ["XDG_CONFIG_HOME": "/c/", "HOME": "/h"][$0] }
        #expect(user == ["/usr/share/pipewire/pipewire.conf.d", "/usr/share/pipewire/filter-chain.conf.d",
                         "/etc/pipewire/pipewire.conf.d", "/etc/pipewire/filter-chain.conf.d",
                         "/c/pipewire/pipewire.conf.d", "/c/pipewire/filter-chain.conf.d"])
        let home = DropIns.directories { ["HOME": "/h"][$0] }
        #expect(home.suffix(2) == ["/h/.config/pipewire/pipewire.conf.d", "/h/.config/pipewire/filter-chain.conf.d"])
        let explicit = DropIns.directories { ["PIPEWIRE_CONFIG_DIR": "/p", "HOME": "/h"][$0] }
        #expect(explicit.suffix(2) == ["/p/pipewire.conf.d", "/p/filter-chain.conf.d"])
    }

    /// A file of brackets alone, 4,000 levels deep (8 KB), is refused with its reason instead of
    /// overflowing the stack; a chain inside 60 levels of arrays still reads.
    @Test func deeplyNestedFilesAreRefusedNotACrash() throws {
        let deep = "a = " + String(repeating: "[", count: 4000) + String(repeating: "]", count: 4000)
        #expect(throws: DropIns.Unreadable(reason: "nested more than 64 levels deep")) { try DropIns.chains(in: deep, path: "deep.conf") }
        let objects = "a = " + String(repeating: "{ b = ", count: 4000) + "1" + String(repeating: " }", count: 4000)
        #expect(throws: DropIns.Unreadable(reason: "nested more than 64 levels deep")) { try DropIns.chains(in: objects, path: "deep.conf") }
        let fine = "a = " + String(repeating: "[", count: 60) + "{ type = ladspa label = hear_mono control = { chain = 3 } }" + String(repeating: "]", count: 60)
        #expect(try DropIns.chains(in: fine, path: "ok.conf").first?.chain == 3)
    }

    /// Byte offsets of a text's UTF-8 form, as substrings (the span's contract).
    static func bytes(_ text: String, _ range: Range<Int>) -> String {
        String(decoding: Array(text.utf8)[range], as: UTF8.self)
    }

    @Test func theDeviceSideBlockAndItsTargetAreFoundByteExact() throws {
        let microphone = try String(contentsOfFile: Self.root + "/conf.d/pipewire/hear-microphone.conf", encoding: .utf8)
        let capture = try #require(SPAObjectSpan.find("capture.props", member: "target.object", in: microphone))
        let utf8 = Array(microphone.utf8)
        #expect(utf8[capture.open] == UInt8(ascii: "{") && utf8[capture.close] == UInt8(ascii: "}"))
        #expect(capture.members.isEmpty)
        // Braces in comments and strings, a quoted key, a bare value, a nested object before the
        // member, a multi-byte character before it all: what PipeWire reads, not what a byte scan would.
        let text = """
            # capture.props = { target.object = "wrong" }  é
            context.modules = [ { name = libpipewire-module-filter-chain
              args = { node.description = "a { brace" playback.props = { target.object = x }
                capture.props = {
                  node.name = "hear_microphone"   # } not the end
                  audio.position = [ FL ] "target.object" = "alsa_input.usb-1"
                  target.object = bare.name
                } } } ]
            """
        let span = try #require(SPAObjectSpan.find("capture.props", member: "target.object", in: text))
        #expect(Self.bytes(text, span.open..<span.close + 1).hasPrefix("{\n      node.name"))
        #expect(Self.bytes(text, span.open..<span.close + 1).hasSuffix("bare.name\n    }"))
        #expect(span.members.map(\.value) == ["alsa_input.usb-1", "bare.name"])
        #expect(span.members.map { Self.bytes(text, $0.bytes) } == ["\"target.object\" = \"alsa_input.usb-1\"", "target.object = bare.name"])
        let playback = try #require(SPAObjectSpan.find("playback.props", member: "target.object", in: text))
        #expect(playback.members.map(\.value) == ["x"])
        #expect(SPAObjectSpan.find("capture.props", member: "target.object", in: "capture.props = { a = 1") == nil)
        #expect(SPAObjectSpan.find("nowhere", member: "target.object", in: text) == nil)
    }
}
