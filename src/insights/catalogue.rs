//! The metric identifiers each platform offers (spec §2.8), as `GET /api/performance/metrics`
//! lists them (spec §4.4).

use serde_json::Value;

use super::AccountSummary;

/// The `GET /api/performance/metrics` body for the account (not built yet).
pub fn metrics_body(account: &AccountSummary) -> Value {
    serde_json::json!({"success": true, "account_id": account.account_id, "platform": account.platform.as_str()})
}
