//! Actors of the service. So far: the batch writer of API-key last-use times.

pub mod last_used;
