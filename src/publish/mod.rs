//! Publishing: validation of `POST /v2/posts` into a typed plan ([`validate`], [`plan`]), the
//! media probe and SSRF guard ([`media`]), running a plan as recorded steps ([`run`]), and
//! carrying on publishes the platform was still processing at our deadline ([`reconcile`]).

pub mod media;
pub mod plan;
pub mod reconcile;
pub mod run;
pub mod service;
pub mod validate;
