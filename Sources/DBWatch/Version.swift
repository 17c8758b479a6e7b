/// This release of DBWatch, as semantic versioning writes it: the newest
/// version in `CHANGELOG.md`, and what `dbwatch --version` prints.
///
/// The one place the version is written; a test checks the other two
/// against it.
public let dbWatchVersion = "0.1.0"
