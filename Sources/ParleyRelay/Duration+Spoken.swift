extension Duration {
    /// The duration in seconds, as a number (for rates and the wire's seconds fields).
    var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// Seconds as a message names them: "10 s", "2.5 s", "0.3 s" (to a tenth).
    public var spokenSeconds: String {
        let (seconds, attoseconds) = components
        let tenths = seconds * 10 + (attoseconds + 50_000_000_000_000_000) / 100_000_000_000_000_000
        return tenths % 10 == 0 ? "\(tenths / 10) s" : "\(tenths / 10).\(tenths % 10) s"
    }
}
