use sea_orm::entity::prelude::*;

/// An `Idempotency-Key` a user sent with `POST /v2/posts`: the request it was first sent with
/// (its fingerprint), the claim of the request running with it (`locked_until`), and the answer
/// that request got (`response_status`, `response_body`), replayed to a retry. Kept until
/// `expires_at` (24 hours after the first request).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "idempotency_keys")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub user_id: Uuid,
    /// The key as the client meant it (unquoted); unique per user.
    pub idempotency_key: String,
    /// SHA-256 (hex) of the first request's body bytes.
    pub fingerprint: String,
    /// The history row (`post_submissions.id`) a publish under this key writes, chosen when
    /// the key is claimed: what a retry is pointed at when the first request never answered.
    pub post_submission_id: Uuid,
    /// While the first request runs: until when its claim holds. `None` once answered.
    pub locked_until: Option<DateTimeUtc>,
    /// The first request's answer: its HTTP status and its JSON body, as sent.
    pub response_status: Option<i32>,
    pub response_body: Option<String>,
    pub created_at: DateTimeUtc,
    pub expires_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
