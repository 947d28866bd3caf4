//! Operator actions shared by the CLI (`service user …`, `service account …`) and the
//! `/admin/*` endpoints.

use chrono::{DateTime, Months, Utc};
use serde::Deserialize;
use uuid::Uuid;

use crate::{
    crypto::TokenCipher,
    domain::plan::Platform,
    error::{ApiError, ErrorCode},
    store::{NewAccount, Store},
    tokens::PlainTokens,
    usage::Plan,
};

/// A plan change as an operator requests it.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct PlanChange {
    pub plan: String,
    /// `monthly` (default for paid plans) or `annual`.
    pub plan_type: Option<String>,
    /// End of the paid period; default one month or one year from now.
    pub current_period_end: Option<DateTime<Utc>>,
}

/// How a paid plan is billed (`plan_type` on the wire and in the user row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanType {
    Monthly,
    Annual,
}

impl PlanType {
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "monthly" => Some(Self::Monthly),
            "annual" => Some(Self::Annual),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Monthly => "monthly",
            Self::Annual => "annual",
        }
    }

    /// The default length of one paid period.
    pub fn months(self) -> u32 {
        match self {
            Self::Monthly => 1,
            Self::Annual => 12,
        }
    }
}

/// A checked plan change: a paid plan carries its billing; a free one carries none (whatever
/// the request says about billing is ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanSetting {
    pub plan: Plan,
    pub billing: Option<Billing>,
}

/// A paid plan's billing: the period type and, when the operator gave one, the period's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Billing {
    pub plan_type: PlanType,
    pub current_period_end: Option<DateTime<Utc>>,
}

/// The plan first, then (paid plans only) the plan type, defaulting to monthly.
impl TryFrom<PlanChange> for PlanSetting {
    type Error = ApiError;

    fn try_from(change: PlanChange) -> Result<Self, ApiError> {
        let plan = Plan::parse(&change.plan).ok_or_else(|| {
            ApiError::invalid_request("plan must be one of `free`, `pro`, `ultra`")
        })?;
        let billing = if plan.is_paid() {
            let plan_type = match change.plan_type.as_deref() {
                None => PlanType::Monthly,
                Some(raw) => PlanType::parse(raw).ok_or_else(|| {
                    ApiError::invalid_request("plan_type must be `monthly` or `annual`")
                })?,
            };
            Some(Billing {
                plan_type,
                current_period_end: change.current_period_end,
            })
        } else {
            None
        };
        Ok(Self { plan, billing })
    }
}

/// Sets a user's plan (the CLI, the demo and the dashboard's form build a [`PlanChange`]).
pub async fn set_user_plan(
    store: &Store,
    now: DateTime<Utc>,
    user_id: Uuid,
    change: PlanChange,
) -> Result<entity::user::Model, ApiError> {
    apply_plan(store, now, user_id, PlanSetting::try_from(change)?).await
}

/// Sets a user's plan; a paid period without an end runs one period from `now`.
pub async fn apply_plan(
    store: &Store,
    now: DateTime<Utc>,
    user_id: Uuid,
    setting: PlanSetting,
) -> Result<entity::user::Model, ApiError> {
    let (plan_type, period_end) = match setting.billing {
        Some(billing) => (
            Some(billing.plan_type.as_str().to_string()),
            billing
                .current_period_end
                .or_else(|| now.checked_add_months(Months::new(billing.plan_type.months()))),
        ),
        None => (None, None),
    };
    store
        .set_plan(user_id, setting.plan, plan_type, period_end, now)
        .await?
        .ok_or_else(|| ApiError::not_found("User not found"))
}

/// Grants or withdraws the operator role stored on the user row (the `service user operator`
/// CLI; tests call it too).
pub async fn set_operator(
    store: &Store,
    now: DateTime<Utc>,
    user_id: Uuid,
    on: bool,
) -> Result<entity::user::Model, ApiError> {
    store
        .set_operator(user_id, on, now)
        .await?
        .ok_or_else(|| ApiError::not_found("User not found"))
}

/// Whether a dashboard user is an operator: the role stored by the CLI, or an e-mail address
/// listed in `auth.operator_emails` (compared without regard to case, as e-mail domains are)
/// that the identity provider said is verified. An unverified address proves nothing: anyone
/// may register any address at many providers.
pub fn is_operator(config: &crate::config::Config, user: &entity::user::Model) -> bool {
    user.is_operator
        || user.email_verified
            && user.email.as_deref().is_some_and(|email| {
                config
                    .auth
                    .operator_emails
                    .iter()
                    .any(|listed| listed.trim().eq_ignore_ascii_case(email.trim()))
            })
}

/// A connected account created by an operator (until OAuth connection lands, and for demos).
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct ManualAccount {
    pub user_id: Uuid,
    pub platform: String,
    pub external_id: String,
    pub name: String,
    pub username: Option<String>,
    pub account_type: Option<String>,
    pub profile_picture_url: Option<String>,
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub token_expires_at: Option<DateTime<Utc>>,
    pub data_access_expires_at: Option<DateTime<Utc>>,
}

/// A [`ManualAccount`] whose fields are checked: a known platform, no NUL anywhere, a
/// non-blank id, name and token, and a token of printable ASCII.
#[derive(Debug, Clone)]
pub struct CheckedAccount {
    pub user_id: Uuid,
    pub platform: Platform,
    pub external_id: String,
    pub name: String,
    pub username: Option<String>,
    pub account_type: Option<String>,
    pub profile_picture_url: Option<String>,
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub token_expires_at: Option<DateTime<Utc>>,
    pub data_access_expires_at: Option<DateTime<Utc>>,
}

/// Checked in this order: platform, NUL in any text, blank required text, the token's characters.
impl TryFrom<ManualAccount> for CheckedAccount {
    type Error = ApiError;

    fn try_from(manual: ManualAccount) -> Result<Self, ApiError> {
        let platform = Platform::parse(&manual.platform).ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidPlatform,
                format!(
                    "platform must be one of {}",
                    Platform::ALL.map(Platform::as_str).join(", ")
                ),
            )
        })?;
        for (name, value) in [
            ("external_id", Some(&manual.external_id)),
            ("name", Some(&manual.name)),
            ("username", manual.username.as_ref()),
            ("account_type", manual.account_type.as_ref()),
            ("profile_picture_url", manual.profile_picture_url.as_ref()),
            ("access_token", Some(&manual.access_token)),
            ("refresh_token", manual.refresh_token.as_ref()),
        ] {
            if let Some(value) = value {
                crate::domain::text::reject_nul(name, value)?;
            }
        }
        // Every platform call sends the token and names the account by its id: an empty one
        // would only reach the platform as a request it refuses (no token, no such node).
        for (name, value) in [
            ("external_id", &manual.external_id),
            ("name", &manual.name),
            ("access_token", &manual.access_token),
        ] {
            if value.trim().is_empty() {
                return Err(ApiError::missing_parameter(name));
            }
        }
        if !manual.access_token.chars().all(|c| c.is_ascii_graphic()) {
            return Err(ApiError::invalid_request(
                "access_token must be printable ASCII without spaces",
            ));
        }
        Ok(Self {
            user_id: manual.user_id,
            platform,
            external_id: manual.external_id,
            name: manual.name,
            username: manual.username,
            account_type: manual.account_type,
            profile_picture_url: manual.profile_picture_url,
            access_token: manual.access_token,
            refresh_token: manual.refresh_token,
            token_expires_at: manual.token_expires_at,
            data_access_expires_at: manual.data_access_expires_at,
        })
    }
}

/// Records a connected account, encrypting its tokens (the CLI and the demo build a
/// [`ManualAccount`]).
pub async fn add_account(
    store: &Store,
    cipher: &TokenCipher,
    now: DateTime<Utc>,
    manual: ManualAccount,
) -> Result<entity::account::Model, ApiError> {
    record_account(store, cipher, now, CheckedAccount::try_from(manual)?).await
}

/// Records a checked account for an existing user, encrypting its tokens.
pub async fn record_account(
    store: &Store,
    cipher: &TokenCipher,
    now: DateTime<Utc>,
    account: CheckedAccount,
) -> Result<entity::account::Model, ApiError> {
    if store.find_user(account.user_id).await?.is_none() {
        return Err(ApiError::not_found("User not found"));
    }
    let new = NewAccount {
        user_id: account.user_id,
        platform: account.platform,
        external_id: account.external_id,
        display_name: account.name,
        username: account.username,
        account_type: account.account_type,
        profile_picture_url: account.profile_picture_url,
        tokens: PlainTokens::new(&account.access_token, account.refresh_token.as_deref()),
        token_expires_at: account.token_expires_at,
        data_access_expires_at: account.data_access_expires_at,
        // An operator adds Facebook-Login tokens; Instagram Login accounts connect by OAuth.
        login_route: Default::default(),
        token_issued_at: None,
    };
    Ok(store.insert_account(new, cipher, now).await?)
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use crate::usage::Plan;

    use super::*;
    use crate::config::Config;

    fn user(email: Option<&str>, is_operator: bool) -> entity::user::Model {
        let now = Utc::now();
        entity::user::Model {
            id: Uuid::nil(),
            email: email.map(str::to_string),
            email_verified: true,
            display_name: None,
            oidc_issuer: "issuer".into(),
            oidc_subject: "subject".into(),
            plan: crate::usage::Plan::Free,
            plan_type: None,
            current_period_end: None,
            is_operator,
            disabled_at: None,
            created_at: now,
            updated_at: now,
        }
    }

    #[test]
    fn the_operator_role_comes_from_the_email_list_or_the_stored_flag() {
        let mut config = Config::default();
        assert!(!is_operator(&config, &user(Some("ops@example.com"), false)));
        assert!(is_operator(&config, &user(None, true)));
        config.auth.operator_emails = vec![" Ops@Example.COM ".into()];
        assert!(is_operator(&config, &user(Some("ops@example.com"), false)));
        assert!(!is_operator(&config, &user(Some("ops@example.org"), false)));
        assert!(!is_operator(&config, &user(None, false)));
    }

    #[test]
    fn a_listed_but_unverified_address_is_no_operator() {
        let mut config = Config::default();
        config.auth.operator_emails = vec!["ops@example.com".into()];
        let unverified = entity::user::Model {
            email_verified: false,
            ..user(Some("ops@example.com"), false)
        };
        assert!(!is_operator(&config, &unverified));
        // The role the CLI stored does not depend on the address.
        let stored = entity::user::Model {
            email_verified: false,
            ..user(Some("ops@example.com"), true)
        };
        assert!(is_operator(&config, &stored));
    }

    fn change(plan: &str, plan_type: Option<&str>) -> PlanChange {
        PlanChange {
            plan: plan.into(),
            plan_type: plan_type.map(str::to_string),
            current_period_end: None,
        }
    }

    #[test]
    fn plan_change_table() {
        let bad_plan = "plan must be one of `free`, `pro`, `ultra`";
        let bad_type = "plan_type must be `monthly` or `annual`";
        let paid = |plan, plan_type| {
            Ok(PlanSetting {
                plan,
                billing: Some(Billing {
                    plan_type,
                    current_period_end: None,
                }),
            })
        };
        let cases = [
            ("pro", None, paid(Plan::Pro, PlanType::Monthly)),
            ("ultra", Some("annual"), paid(Plan::Ultra, PlanType::Annual)),
            ("pro", Some("monthly"), paid(Plan::Pro, PlanType::Monthly)),
            // A free plan keeps no billing, whatever was asked.
            (
                "free",
                Some("weekly"),
                Ok(PlanSetting {
                    plan: Plan::Free,
                    billing: None,
                }),
            ),
            ("pro", Some("weekly"), Err(bad_type)),
            ("pro", Some(""), Err(bad_type)),
            // The plan is checked first.
            ("gold", Some("weekly"), Err(bad_plan)),
        ];
        for (plan, plan_type, expected) in cases {
            let got = PlanSetting::try_from(change(plan, plan_type)).map_err(|e| {
                assert_eq!(e.code, ErrorCode::InvalidRequest);
                e.message
            });
            assert_eq!(
                got,
                expected.map_err(str::to_string),
                "{plan} {plan_type:?}"
            );
        }
        let end = Utc::now();
        let kept = PlanSetting::try_from(PlanChange {
            current_period_end: Some(end),
            ..change("pro", None)
        })
        .map(|s| s.billing.and_then(|b| b.current_period_end));
        assert_eq!(kept.ok().flatten(), Some(end));
    }

    fn manual(platform: &str, name: &str, token: &str) -> ManualAccount {
        ManualAccount {
            user_id: Uuid::nil(),
            platform: platform.into(),
            external_id: "17841".into(),
            name: name.into(),
            username: None,
            account_type: None,
            profile_picture_url: None,
            access_token: token.into(),
            refresh_token: None,
            token_expires_at: None,
            data_access_expires_at: None,
        }
    }

    #[test]
    fn manual_account_table() {
        let platforms = Platform::ALL.map(Platform::as_str).join(", ");
        let bad_platform = (
            ErrorCode::InvalidPlatform,
            format!("platform must be one of {platforms}"),
        );
        let cases = [
            (manual("threads", "Page", "tok"), Ok(Platform::Threads)),
            (manual("myspace", "Page", "tok"), Err(bad_platform.clone())),
            // Platform first, then NUL, then blanks, then the token's characters.
            (manual("myspace", "\0", " "), Err(bad_platform)),
            (
                manual("threads", "\0", " "),
                Err((
                    ErrorCode::InvalidRequest,
                    "name must not contain NUL characters (\\u0000)".to_string(),
                )),
            ),
            (
                manual("threads", " ", "a b"),
                Err((
                    ErrorCode::MissingParameter,
                    "Missing required parameter: name".to_string(),
                )),
            ),
            (
                manual("threads", "Page", "a b"),
                Err((
                    ErrorCode::InvalidRequest,
                    "access_token must be printable ASCII without spaces".to_string(),
                )),
            ),
        ];
        for (input, expected) in cases {
            let label = format!("{input:?}");
            let got = CheckedAccount::try_from(input)
                .map(|a| a.platform)
                .map_err(|e| (e.code, e.message));
            assert_eq!(got, expected, "{label}");
        }
    }
}
