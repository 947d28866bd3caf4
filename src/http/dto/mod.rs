//! The HTTP contract: every JSON body the service answers with (and the request bodies and
//! queries it reads), as types. The OpenAPI document ([`super::openapi`]) is derived from them,
//! so what a handler serializes and what the document promises cannot drift apart.
//!
//! - [`resources`]: the spec's resources (§2) and their conversions from the stored rows;
//! - [`responses`]: the envelopes each endpoint answers with;
//! - [`requests`]: request bodies and query strings;
//! - [`schema`]: schema-only types (enums of wire strings, the error bodies).
//!
//! Conventions: a key that is always present is a plain field (`Option<T>` when it may be
//! `null`); a key that is sometimes absent carries `skip_serializing_if` and `required = false`.
//! Times are RFC 3339 strings in UTC with milliseconds ([`iso`]).

pub mod requests;
pub mod resources;
pub mod responses;
pub mod schema;

pub use crate::domain::time::iso;
