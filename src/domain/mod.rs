//! The service's ground vocabulary, shared by every floor above: the typed publish plan, a
//! post's status as its resource tells it, a day's account numbers, uploaded media's kinds, a request's idempotency key, who signed in, an account
//! token's verdicts, the API's time format, webhooks' events and signatures, and the checks every request's text and ids pass.
//! Nothing here does I/O.

pub mod daily;
pub mod idempotency;
pub mod identity;
pub mod media;
pub mod plan;
pub mod post_status;
pub mod text;
pub mod time;
pub mod token_status;
pub mod webhook;
