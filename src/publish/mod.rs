//! Publishing: validation of `POST /v2/posts` into a typed plan ([`validate`] into
//! [`crate::domain::plan`]; the media probe and SSRF guard are [`crate::media`]'s), running a plan as recorded steps
//! ([`run`], [`steps`], under the account's lease: [`leased`]), and carrying on publishes the platform was still processing at our
//! deadline ([`reconcile`]).

pub mod leased;
pub mod reconcile;
pub mod run;
pub mod steps;
pub mod validate;
