//! The Meta Graph layer shared by facebook, instagram and threads: TODO (being written).
