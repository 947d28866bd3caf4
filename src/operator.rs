//! Operator actions shared by the CLI (`service user …`, `service account …`) and the
//! `/admin/*` endpoints.

use chrono::{DateTime, Months, Utc};
use serde::Deserialize;
use uuid::Uuid;

use crate::{
    crypto::TokenCipher,
    error::{ApiError, ErrorCode},
    publish::plan::Platform,
    store::{NewAccount, Store},
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

/// Sets a user's plan.
pub async fn set_user_plan(
    store: &Store,
    now: DateTime<Utc>,
    user_id: Uuid,
    change: PlanChange,
) -> Result<entity::user::Model, ApiError> {
    let plan = Plan::parse(&change.plan)
        .ok_or_else(|| ApiError::invalid_request("plan must be one of `free`, `pro`, `ultra`"))?;
    let (plan_type, period_end) = if plan.is_paid() {
        let plan_type = change.plan_type.unwrap_or_else(|| "monthly".into());
        let months = match plan_type.as_str() {
            "monthly" => 1,
            "annual" => 12,
            _ => {
                return Err(ApiError::invalid_request(
                    "plan_type must be `monthly` or `annual`",
                ));
            }
        };
        let end = change
            .current_period_end
            .or_else(|| now.checked_add_months(Months::new(months)));
        (Some(plan_type), end)
    } else {
        (None, None)
    };
    store
        .set_plan(user_id, plan, plan_type, period_end, now)
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
/// listed in `auth.operator_emails` (compared without regard to case, as e-mail domains are).
pub fn is_operator(config: &crate::config::Config, user: &entity::user::Model) -> bool {
    user.is_operator
        || user.email.as_deref().is_some_and(|email| {
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

/// Records a connected account, encrypting its tokens.
pub async fn add_account(
    store: &Store,
    cipher: &TokenCipher,
    now: DateTime<Utc>,
    manual: ManualAccount,
) -> Result<entity::account::Model, ApiError> {
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
            crate::http::reject_nul(name, value)?;
        }
    }
    // Every platform call sends the token and names the account by its id: an empty one would
    // only reach the platform as a request it refuses (no token, no such node).
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
    if store.find_user(manual.user_id).await?.is_none() {
        return Err(ApiError::not_found("User not found"));
    }
    let encrypt = |token: &str| cipher.encrypt(token).map_err(ApiError::internal);
    let new = NewAccount {
        user_id: manual.user_id,
        platform,
        external_id: manual.external_id,
        display_name: manual.name,
        username: manual.username,
        account_type: manual.account_type,
        profile_picture_url: manual.profile_picture_url,
        access_token_enc: encrypt(&manual.access_token)?,
        refresh_token_enc: manual.refresh_token.as_deref().map(encrypt).transpose()?,
        token_expires_at: manual.token_expires_at,
        data_access_expires_at: manual.data_access_expires_at,
        // An operator adds Facebook-Login tokens; Instagram Login accounts connect by OAuth.
        login_route: Default::default(),
        token_issued_at: None,
    };
    Ok(store.insert_account(new, now).await?)
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;
    use crate::config::Config;

    fn user(email: Option<&str>, is_operator: bool) -> entity::user::Model {
        let now = Utc::now();
        entity::user::Model {
            id: Uuid::nil(),
            email: email.map(str::to_string),
            display_name: None,
            oidc_issuer: "issuer".into(),
            oidc_subject: "subject".into(),
            plan: crate::usage::Plan::Free,
            plan_type: None,
            current_period_end: None,
            is_operator,
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
}
