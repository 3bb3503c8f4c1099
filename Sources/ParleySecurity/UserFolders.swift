import Foundation

/// Where Parley keeps a user's files, by the XDG rules with `$HOME` honoured: a program started with another `HOME`
/// (a test, a service account, `sudo -H`) uses that home's folders, never the password database's.
public enum UserFolders {
    /// `$HOME`, else the password database's home for this user.
    public static func home(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
    }

    /// `$XDG_CONFIG_HOME/parley`, or `~/.config/parley`: pinned relays, accounts, keys and theme.
    public static func config(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        (environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home(environment) + "/.config")
            + "/parley"
    }

    /// `$XDG_STATE_HOME/parley`, or `~/.local/state/parley`: logs, the relay's certificate and its state.
    public static func state(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        (environment["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home(environment) + "/.local/state")
            + "/parley"
    }
}
