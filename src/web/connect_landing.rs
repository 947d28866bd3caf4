//! Where a browser's OAuth callback lands: the dashboard's accounts page, with a notice of what
//! was connected or a word for why it was not. The JSON API's callback sends browsers there, and
//! the accounts page reads the word back, so both sides share these words.

use actix_web::HttpResponse;

use super::{i18n::Msg, see_other};
use crate::{
    domain::plan::Platform,
    error::{ApiError, ErrorCode},
};

/// The dashboard's accounts page.
pub const ACCOUNTS_PATH: &str = "/dashboard/accounts";

/// Why a browser's connection failed, as the accounts page says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectProblem {
    State,
    Refused,
    Unavailable,
    Other,
}

impl ConnectProblem {
    pub fn of(error: &ApiError) -> Self {
        match error.code {
            ErrorCode::InvalidOAuthState => Self::State,
            ErrorCode::ConnectionFailed => Self::Refused,
            ErrorCode::ServiceUnavailable => Self::Unavailable,
            _ => Self::Other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::State => "oauth_state",
            Self::Refused => "connection_failed",
            Self::Unavailable => "unavailable",
            Self::Other => "other",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        [Self::State, Self::Refused, Self::Unavailable, Self::Other]
            .into_iter()
            .find(|problem| problem.as_str() == raw)
    }

    pub fn message(self) -> Msg {
        match self {
            Self::State => Msg::ErrorConnectState,
            Self::Refused => Msg::ErrorConnectRefused,
            Self::Unavailable => Msg::ErrorConnectUnavailable,
            Self::Other => Msg::ErrorConnectOther,
        }
    }
}

/// Where a browser's OAuth callback lands: the accounts page, saying what was connected or why
/// it was not (the JSON clients get is unchanged, see `http::connect`).
pub fn connect_landing(
    outcome: Result<(Platform, Vec<entity::account::Model>), ApiError>,
) -> HttpResponse {
    match outcome {
        Ok((platform, accounts)) => see_other(&format!(
            "{ACCOUNTS_PATH}?notice=connected&platform={}&count={}",
            platform.as_str(),
            accounts.len()
        )),
        Err(error) => {
            tracing::info!(code = error.code.as_str(), message = %error.message, details = ?error.details, "a browser's connection failed");
            see_other(&format!(
                "{ACCOUNTS_PATH}?error={}",
                ConnectProblem::of(&error).as_str()
            ))
        }
    }
}
