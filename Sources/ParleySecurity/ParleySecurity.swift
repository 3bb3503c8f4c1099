// ParleySecurity: everything that keeps a call private and its relay authentic, with no UI or socket code, so each
// rule is tested on its own with the RFCs' vectors. See docs/security.md for the threat model.
