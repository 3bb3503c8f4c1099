/// What the parser checks in an a= line: the name's shape, and for the attributes WebRTC reads, that the value parses
/// as its typed value. The raw text is what is kept, so printing gives back the same line.
enum SDPAttributeRules {
    /// The attribute an a= line's value (after "a=") holds, or the error naming the line and what was wrong.
    static func attribute(_ text: String, _ number: Int) throws(SDPError) -> SDPAttribute {
        let colon = text.firstIndex(of: ":")
        let name = String(text[..<(colon ?? text.endIndex)])
        let value = colon.map { String(text[text.index(after: $0)...]) }
        guard !name.isEmpty, name.utf8.count <= SDPLimits.maxTokenBytes,
            name.allSatisfy({ $0.isASCII && !$0.isWhitespace })
        else {
            throw .malformedLine(number: number, "attribute name \"\(name)\" is empty, too long or holds a space")
        }
        do throws(SDPError) {
            try check(name, value)
        } catch .malformedAttribute(_, let attribute, let reason) {
            throw .malformedAttribute(line: number, name: attribute, reason: reason)
        } catch {
            throw error
        }
        return SDPAttribute(name: name, value: value)
    }

    /// The typed values the parser insists on; an unknown name is accepted as it is.
    private static let typed: [String: any SDPAttributeValue.Type] = [
        RTPMap.attributeName: RTPMap.self,
        FormatParameters.attributeName: FormatParameters.self,
        RTCPFeedback.attributeName: RTCPFeedback.self,
        ExtensionMap.attributeName: ExtensionMap.self,
        SSRCAttribute.attributeName: SSRCAttribute.self,
        SSRCGroup.attributeName: SSRCGroup.self,
        RIDDescription.attributeName: RIDDescription.self,
        Simulcast.attributeName: Simulcast.self,
        MediaStreamID.attributeName: MediaStreamID.self,
        Fingerprint.attributeName: Fingerprint.self,
        SetupRole.attributeName: SetupRole.self,
        MediaGroup.attributeName: MediaGroup.self,
        Candidate.attributeName: Candidate.self,
    ]

    private static func check(_ name: String, _ value: String?) throws(SDPError) {
        switch name {
        case "mid":
            _ = try SDPScan.token(value ?? "", name, "mid")
        case "ice-ufrag", "ice-pwd":
            // RFC 8839 §5.4: 4 to 256 (ufrag) or 22 to 256 (pwd) ice-chars; the lower bounds are left to the answer.
            let text = value ?? ""
            guard (1...256).contains(text.utf8.count),
                text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "/") })
            else { throw SDPScan.failure(name, "expected 1 to 256 of A-Z, a-z, 0-9, + and /") }
        default:
            guard let type = typed[name] else { return }
            guard let value else { throw SDPScan.failure(name, "no value") }
            _ = try type.init(attributeValue: value)
        }
    }
}
