//! Webhooks as the Standard Webhooks specification (standardwebhooks.com) has them: the event
//! names a user subscribes to, the signing secret (`whsec_` and base64), the message id, the
//! signature of one attempt, and the retry schedule's delays. Nothing here does I/O.

use base64::{Engine, engine::general_purpose::STANDARD};
use chrono::{DateTime, Duration, Utc};
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

/// The longest endpoint URL accepted.
pub const MAX_URL_CHARS: usize = 2048;
/// The most endpoints one user may have.
pub const MAX_ENDPOINTS_PER_USER: u64 = 20;
/// The longest description accepted.
pub const MAX_DESCRIPTION_CHARS: usize = 500;
/// How long a rotated-out secret keeps signing beside the new one.
pub const PREVIOUS_SECRET_HOURS: i64 = 24;
/// How long an endpoint may fail without a success before it is disabled.
pub const DISABLE_AFTER_DAYS: i64 = 5;
/// How long the delivery log keeps a message after it was delivered or failed for good.
pub const WEBHOOK_LOG_DAYS: i64 = 30;
/// How much of a response the delivery log keeps.
pub const RESPONSE_KEPT_BYTES: usize = 1024;

/// An event a webhook message reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WebhookEvent {
    PostPublished,
    PostFailed,
    PostUnconfirmed,
    AccountTokenExpiring,
    AccountInvalid,
    WebhookTest,
}

impl WebhookEvent {
    /// Every event, in the order lists show them.
    pub const ALL: [Self; 6] = [
        Self::PostPublished,
        Self::PostFailed,
        Self::PostUnconfirmed,
        Self::AccountTokenExpiring,
        Self::AccountInvalid,
        Self::WebhookTest,
    ];

    /// What an endpoint created without `events` takes: every event that happens on its own
    /// (a test message is sent to an endpoint whatever it takes).
    pub const DEFAULT: [Self; 5] = [
        Self::PostPublished,
        Self::PostFailed,
        Self::PostUnconfirmed,
        Self::AccountTokenExpiring,
        Self::AccountInvalid,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::PostPublished => "post.published",
            Self::PostFailed => "post.failed",
            Self::PostUnconfirmed => "post.unconfirmed",
            Self::AccountTokenExpiring => "account.token_expiring",
            Self::AccountInvalid => "account.invalid",
            Self::WebhookTest => "webhook.test",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|event| event.as_str() == raw)
    }

    /// The event a publish's recorded outcome reports (`None`: not an outcome).
    pub fn of_post_status(status: &str) -> Option<Self> {
        match status {
            "published" => Some(Self::PostPublished),
            "failed" => Some(Self::PostFailed),
            "unconfirmed" => Some(Self::PostUnconfirmed),
            _ => None,
        }
    }
}

/// A set of events as stored: their names, comma-separated, in the canonical order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSet(Vec<WebhookEvent>);

impl EventSet {
    /// The events named, duplicates collapsed; the default set for none. `Err` names the first
    /// unknown name.
    pub fn from_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Self, String> {
        let mut events = Vec::new();
        for name in names {
            let event = WebhookEvent::parse(name).ok_or_else(|| name.to_string())?;
            events.push(event);
        }
        if events.is_empty() {
            events = WebhookEvent::DEFAULT.to_vec();
        }
        events.sort();
        events.dedup();
        Ok(Self(events))
    }

    /// The stored form read back; unknown names (none are written) are skipped.
    pub fn from_stored(stored: &str) -> Self {
        let mut events: Vec<WebhookEvent> = stored
            .split(',')
            .filter_map(|name| WebhookEvent::parse(name.trim()))
            .collect();
        events.sort();
        events.dedup();
        Self(events)
    }

    pub fn to_stored(&self) -> String {
        self.names().collect::<Vec<_>>().join(",")
    }

    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.0.iter().map(|event| event.as_str())
    }

    pub fn contains(&self, event: WebhookEvent) -> bool {
        self.0.contains(&event)
    }
}

/// An endpoint's signing secret: 32 random bytes, shown as `whsec_` and their base64.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret(Vec<u8>);

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(…)")
    }
}

impl WebhookSecret {
    const PREFIX: &'static str = "whsec_";

    pub fn generate() -> Self {
        let mut bytes = vec![0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        Self(bytes)
    }

    /// The secret as users see it (and as it is sealed at rest).
    pub fn reveal(&self) -> String {
        format!("{}{}", Self::PREFIX, STANDARD.encode(&self.0))
    }

    /// Reads the form [`Self::reveal`] writes.
    pub fn parse(shown: &str) -> Option<Self> {
        let encoded = shown.strip_prefix(Self::PREFIX)?;
        let bytes = STANDARD.decode(encoded).ok()?;
        (!bytes.is_empty()).then_some(Self(bytes))
    }

    /// `v1,` and the base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`.
    pub fn sign(&self, message_id: &str, timestamp: i64, body: &str) -> String {
        let mut mac = match Hmac::<Sha256>::new_from_slice(&self.0) {
            Ok(mac) => mac,
            // HMAC takes a key of any length.
            Err(_) => unreachable!("HMAC accepts keys of any length"),
        };
        mac.update(message_id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body.as_bytes());
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }
}

/// The `webhook-signature` header of one attempt: a signature by every secret that signs
/// (the current one first), space-separated, as the specification allows during a rotation.
pub fn signature_header(
    secrets: &[WebhookSecret],
    message_id: &str,
    timestamp: i64,
    body: &str,
) -> String {
    secrets
        .iter()
        .map(|secret| secret.sign(message_id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A new message id (`webhook-id`): `msg_` and 32 hex digits.
pub fn new_message_id() -> String {
    format!("msg_{}", uuid::Uuid::new_v4().simple())
}

/// The id of the message that carries event `event_id` to endpoint `endpoint_id`: derived from
/// the two, so that an event fanned out twice (a fan-out cut off before it removed its events,
/// or two instances at once) makes each message once.
pub fn message_id_for(event_id: uuid::Uuid, endpoint_id: uuid::Uuid) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::new()
        .chain_update(event_id.as_bytes())
        .chain_update(endpoint_id.as_bytes())
        .finalize();
    let mut id = String::with_capacity(36);
    id.push_str("msg_");
    for byte in &digest[..16] {
        id.push_str(&format!("{byte:02x}"));
    }
    id
}

/// Whether `raw` has the form of a message id (anything else names no message).
pub fn is_message_id(raw: &str) -> bool {
    raw.strip_prefix("msg_")
        .is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// When attempt number `retry_index` (0 = the first) of a message is due, `from` the event
/// or the attempt before it, with `jitter` (a draw in [-1, 1]) moving each delay after the
/// first by up to a tenth, so that many messages failing together do not retry together.
/// `None` when the schedule has no such attempt.
pub fn attempt_due(
    schedule: &[u64],
    retry_index: usize,
    from: DateTime<Utc>,
    jitter: f64,
) -> Option<DateTime<Utc>> {
    let delay = *schedule.get(retry_index)? as f64;
    let spread = if retry_index == 0 {
        0.0
    } else {
        delay * 0.1 * jitter.clamp(-1.0, 1.0)
    };
    let millis = ((delay + spread) * 1000.0).round().max(0.0) as i64;
    Some(from + Duration::milliseconds(millis))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn an_events_message_to_an_endpoint_has_one_id_of_the_message_form() {
        let (event, endpoint, other) = (
            uuid::Uuid::new_v4(),
            uuid::Uuid::new_v4(),
            uuid::Uuid::new_v4(),
        );
        let id = message_id_for(event, endpoint);
        assert!(is_message_id(&id), "{id}");
        assert_eq!(id, message_id_for(event, endpoint));
        assert_ne!(id, message_id_for(event, other));
        assert_ne!(id, message_id_for(other, endpoint));
    }

    #[test]
    fn event_sets_default_collapse_and_refuse_unknown_names() {
        let all = EventSet::from_names([]).unwrap();
        assert_eq!(
            all.to_stored(),
            "post.published,post.failed,post.unconfirmed,account.token_expiring,account.invalid"
        );
        let some = EventSet::from_names(["account.invalid", "post.failed", "post.failed"]).unwrap();
        assert_eq!(some.to_stored(), "post.failed,account.invalid");
        assert_eq!(EventSet::from_stored(&some.to_stored()), some);
        assert_eq!(
            EventSet::from_names(["post.deleted"]),
            Err("post.deleted".into())
        );
    }

    /// The example of the Standard Webhooks specification's reference libraries.
    #[test]
    fn signatures_match_the_specifications_example() {
        let secret = WebhookSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let signature = secret.sign(
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            r#"{"test": 2432232314}"#,
        );
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn secrets_round_trip_and_message_ids_have_their_form() {
        let secret = WebhookSecret::generate();
        let shown = secret.reveal();
        assert!(shown.starts_with("whsec_"));
        assert_eq!(STANDARD.decode(&shown[6..]).unwrap().len(), 32);
        assert_eq!(WebhookSecret::parse(&shown), Some(secret));
        assert!(is_message_id(&new_message_id()));
        assert!(!is_message_id("msg_../../x"));
    }

    #[test]
    fn attempts_follow_the_schedule_within_a_tenth() {
        let at = Utc::now();
        let schedule = [0, 5, 300];
        assert_eq!(attempt_due(&schedule, 0, at, 1.0), Some(at));
        assert_eq!(
            attempt_due(&schedule, 1, at, 1.0),
            Some(at + Duration::milliseconds(5500))
        );
        assert_eq!(
            attempt_due(&schedule, 2, at, -1.0),
            Some(at + Duration::seconds(270))
        );
        assert_eq!(attempt_due(&schedule, 3, at, 0.0), None);
    }
}
