import Testing

@testable import ParleyPictures
@testable import ParleyTUI

@Suite("Theme")
struct ThemeTests {
    static func colorsWithin(_ style: CellStyle, limit: Int) -> Bool {
        [style.foreground, style.background].allSatisfy { color in
            switch color {
            case .default: return true
            case .palette(let index): return Int(index) < limit
            case .rgb: return false
            }
        }
    }

    @Test("every role uses only colours the depth has", arguments: ColorDepth.allCases)
    func rolesFitDepth(_ depth: ColorDepth) {
        let theme = Theme(depth: depth)
        let limit: Int
        switch depth {
        case .monochrome: limit = 0
        case .ansi8, .ansi16: limit = 8
        case .palette256, .direct: limit = 256
        }
        for role in ColorRole.allCases {
            #expect(Self.colorsWithin(theme.style(role), limit: limit), "\(role) at \(depth)")
        }
    }

    @Test("roles a user must tell apart differ at every depth", arguments: ColorDepth.allCases)
    func distinctRoles(_ depth: ColorDepth) {
        let theme = Theme(depth: depth)
        let pairs: [(ColorRole, ColorRole)] = [
            (.tileBorder, .tileBorderSpeaking), (.tileBorder, .tileBorderFocused),
            (.tileBorderSpeaking, .tileBorderFocused), (.tileBorderSpeaking, .tileBorderDominant),
            (.tileBorderDominant, .tileBorderFocused), (.chatText, .chatAlert),
            (.controlBarActive, .controlBarInactive),
            (.controlBar, .controlBarKey), (.text, .selection),
        ]
        for (a, b) in pairs {
            #expect(theme.style(a) != theme.style(b), "\(a) and \(b) look the same at \(depth)")
        }
    }

    @Test("participant colours: neighbours differ, indices wrap, negative indices work")
    func participants() {
        for depth in [ColorDepth.ansi8, .ansi16, .palette256] {
            let theme = Theme(depth: depth)
            for index in 0..<20 {
                #expect(theme.participantColor(index) != theme.participantColor(index + 1))
            }
            #expect(theme.participantColor(-1) == theme.participantColor(-1 + 1320))  // 1320 = lcm(6, 11, 12) * 10
        }
        let distinct = Set((0..<12).map { Theme(depth: .palette256).participantColor($0) })
        #expect(distinct.count == 12)
        #expect(Theme(depth: .monochrome).participantColor(3) == .default)
        #expect(Theme(depth: .monochrome).participantStyle(3).attributes == .bold)
    }
}
