//! Publishing: validation of `POST /v2/posts` into a typed plan ([`validate`], [`plan`]), the
//! media probe and SSRF guard ([`media`]), and running a plan as recorded steps ([`run`]).

pub mod media;
pub mod plan;
pub mod run;
pub mod service;
pub mod validate;
