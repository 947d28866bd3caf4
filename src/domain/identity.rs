//! Who signed in to the dashboard, as the identity provider vouched for them.

/// Who signed in, from a validated ID token.
#[derive(Debug, Clone)]
pub struct Identity {
    pub issuer: String,
    pub subject: String,
    pub email: Option<String>,
    /// Whether the provider asserted `email_verified: true` for `email`.
    pub email_verified: bool,
    pub name: Option<String>,
}
