//! Log setup shared by `main`: the default filter, and the demotion of client mistakes that
//! actix-http logs as errors.
//!
//! actix-http's HTTP/1 dispatcher ends a connection whose request it could not parse (bad
//! framing, invalid chunk sizes, an oversized head, …) with `error!("stream error: …")`, and one
//! whose socket failed with `error!("stream error: I/O error: …")`. Both are the client's doing,
//! and anyone can cause them at will: at `error` they would flood the log and drown our own
//! faults. [`DemoteClientErrors`] drops those events and logs them again at `debug`, under the
//! target [`CLIENT_ERRORS_TARGET`], where `RUST_LOG` controls them like any other event.
//! Every other event passes untouched (actix's own faults, such as a response body stream
//! failing, stay errors).

use tracing::{
    Event, Level, Metadata, Subscriber,
    callsite::{DefaultCallsite, Identifier},
    field::{Field, FieldSet, Value, Visit},
    metadata::Kind,
};
use tracing_subscriber::layer::{Context, Layer};

/// The filter when `RUST_LOG` is not set.
pub const DEFAULT_FILTER: &str = "info,sqlx=warn,actix_server=warn";

/// Where demoted client mistakes are logged (at `debug`):
/// `RUST_LOG=info,social_service::client_errors=debug` shows them.
pub const CLIENT_ERRORS_TARGET: &str = "social_service::client_errors";

/// The `DispatchError` kinds (their `Display` prefixes) that a client causes.
const CLIENT_CAUSED: &[&str] = &["request parse error", "I/O error"];

/// A layer that turns actix-http's client-caused "stream error" events into `debug` events.
#[derive(Debug, Clone, Copy, Default)]
pub struct DemoteClientErrors;

/// The demoted event's callsite. A `tracing::debug!` cannot be used: tracing drops events
/// dispatched from inside a subscriber's own callback, so the event is built here and handed to
/// the wrapped subscriber directly.
static DEMOTED_CALLSITE: DefaultCallsite = DefaultCallsite::new(&DEMOTED);
static DEMOTED: Metadata<'static> = Metadata::new(
    "client error",
    CLIENT_ERRORS_TARGET,
    Level::DEBUG,
    Some(file!()),
    Some(line!()),
    Some(module_path!()),
    FieldSet::new(&["message", "error"], Identifier(&DEMOTED_CALLSITE)),
    Kind::EVENT,
);

impl<S: Subscriber> Layer<S> for DemoteClientErrors {
    /// Runs before the event reaches the wrapped subscriber: `false` keeps it from being logged.
    fn event_enabled(&self, event: &Event<'_>, ctx: Context<'_, S>) -> bool {
        let Some(error) = client_caused_error(event) else {
            return true;
        };
        // The filter (`RUST_LOG`) decides about the debug event as about any other.
        if ctx.enabled(&DEMOTED) {
            let fields = DEMOTED.fields();
            if let (Some(message_field), Some(error_field)) =
                (fields.field("message"), fields.field("error"))
            {
                let message = format_args!("connection closed on a client error");
                let error = error.as_str();
                let values: [(&Field, Option<&dyn Value>); 2] = [
                    (&message_field, Some(&message)),
                    (&error_field, Some(&error)),
                ];
                ctx.event(&Event::new(&DEMOTED, &fields.value_set(&values)));
            }
        }
        false
    }
}

/// The error text of an actix-http "stream error" event the client caused, if `event` is one.
fn client_caused_error(event: &Event<'_>) -> Option<String> {
    let metadata = event.metadata();
    if *metadata.level() != Level::ERROR || !metadata.target().starts_with("actix_http::h1") {
        return None;
    }
    let mut message = MessageText(None);
    event.record(&mut message);
    let error = message.0?.strip_prefix("stream error: ")?.to_string();
    CLIENT_CAUSED
        .iter()
        .any(|kind| error.starts_with(kind))
        .then_some(error)
}

/// Collects an event's `message` field.
struct MessageText(Option<String>);

impl Visit for MessageText {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0 = Some(value.to_string());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = Some(format!("{value:?}"));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::{Arc, Mutex};

    use tracing_subscriber::{layer::SubscriberExt, registry::Registry};

    use super::*;

    /// Records (level, target, message) of every event it sees.
    #[derive(Clone, Default)]
    struct Recorder(Arc<Mutex<Vec<(Level, String, String)>>>);

    impl<S: Subscriber> Layer<S> for Recorder {
        fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
            let mut message = MessageText(None);
            event.record(&mut message);
            self.0.lock().unwrap().push((
                *event.metadata().level(),
                event.metadata().target().to_string(),
                message.0.unwrap_or_default(),
            ));
        }
    }

    #[test]
    fn client_caused_stream_errors_become_debug_and_the_rest_stay() {
        let recorder = Recorder::default();
        let subscriber = Registry::default()
            .with(recorder.clone())
            .with(DemoteClientErrors);
        tracing::subscriber::with_default(subscriber, || {
            tracing::error!(target: "actix_http::h1::dispatcher", "stream error: {}",
                "request parse error: invalid Header provided");
            tracing::error!(target: "actix_http::h1::dispatcher", "stream error: {}",
                "I/O error: connection reset by peer");
            tracing::error!(target: "actix_http::h1::dispatcher", "Response payload stream error: boom");
            tracing::error!(target: "actix_http::h1::dispatcher", "stream error: internal error");
            tracing::error!(target: "social_service", "stream error: request parse error: ours");
        });
        let events = recorder.0.lock().unwrap().clone();
        let levels: Vec<(Level, &str)> = events
            .iter()
            .map(|(level, target, _)| (*level, target.as_str()))
            .collect();
        assert_eq!(
            levels,
            [
                (Level::DEBUG, CLIENT_ERRORS_TARGET),
                (Level::DEBUG, CLIENT_ERRORS_TARGET),
                (Level::ERROR, "actix_http::h1::dispatcher"),
                (Level::ERROR, "actix_http::h1::dispatcher"),
                (Level::ERROR, "social_service"),
            ]
        );
    }
}
