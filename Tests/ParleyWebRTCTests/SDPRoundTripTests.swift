import Testing

@testable import ParleyWebRTC

/// Variants of a fixture's lines the parser may or may not accept: each line dropped, doubled, cut in half, given a
/// trailing space or a tab for its first space. Whatever it accepts must print back to the same value, the property
/// the fuzz target will check on random input.
private func variants(of text: String) -> [String] {
    // "\r\n" is one Character in Swift, so a CRLF text splits on it, not on "\n".
    let separator: Character = text.contains("\r\n") ? "\r\n" : "\n"
    let lines = text.split(separator: separator, omittingEmptySubsequences: false).map(String.init)
    var variants: [String] = []
    for index in lines.indices {
        var dropped = lines
        dropped.remove(at: index)
        var doubled = lines
        doubled.insert(lines[index], at: index)
        var cut = lines
        cut[index] = String(lines[index].prefix(lines[index].count / 2))
        var spaced = lines
        spaced[index] = lines[index].replacingFirst(" ", with: "\t") + " "
        variants += [dropped, doubled, cut, spaced].map { $0.joined(separator: String(separator)) }
    }
    return variants
}

extension String {
    fileprivate func replacingFirst(_ target: Character, with replacement: Character) -> String {
        guard let index = firstIndex(of: target) else { return self }
        var copy = self
        copy.replaceSubrange(index...index, with: String(replacement))
        return copy
    }
}

@Suite struct SDPRoundTripTests {
    @Test(arguments: [
        ("chrome offer", SDPFixtures.chromeOffer), ("relay answer", SDPFixtures.chromeAnswer),
        ("unusual", SDPFixtures.unusual),
    ])
    func everyAcceptedVariantRoundTrips(name: String, text: String) throws {
        let all = variants(of: text)
        var accepted = 0
        for variant in all {
            guard let parsed = try? SessionDescription(parsing: variant) else { continue }
            accepted += 1
            #expect(try SessionDescription(parsing: parsed.description) == parsed, "\(name): \(variant)")
        }
        // Most variants are still descriptions; a parser that refused them all would make this test empty.
        #expect(accepted > all.count / 2)
    }

    @Test func typedOfferAndAnswerSurviveTheirOwnText() throws {
        let offer = try SessionDescription(parsing: SDPFixtures.chromeOffer)
        let summary = try BrowserOffer(offer)
        let reread = try BrowserOffer(SessionDescription(parsing: offer.description))
        #expect(reread == summary)
        let answer = try summary.answer(with: SDPFixtures.relay)
        #expect(try SessionDescription(parsing: answer.description).description == answer.description)
    }
}
