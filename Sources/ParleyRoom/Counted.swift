/// "1 member", "3 members": a count with its noun in the right number (`plural` when adding an s is wrong).
public func counted(_ count: Int, _ noun: String, plural: String? = nil) -> String {
    "\(count) " + (count == 1 ? noun : plural ?? noun + "s")
}
