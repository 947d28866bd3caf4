//! Platform ids and the platform URLs built from them.
//!
//! A value reaches a platform URL only through this module. Each id grammar is a type whose
//! only constructor checks the grammar ([`GraphId`], [`FacebookPostId`], [`YoutubeVideoId`],
//! [`TiktokVideoId`], [`XId`]), and [`ApiPath`] is built only from those types and string
//! literals; [`ApiPath::on`] appends every segment with `Url::path_segments_mut().push`, so each
//! one is percent-encoded as exactly one path segment. A client's `..%2F..%2Foidc` can therefore
//! never walk the platform host with our token: it is not an id of any grammar, and it is refused
//! before any call.
//!
//! What a value that does not fit means depends on where it came from:
//! - a client's or our store's value ([`InvalidId::not_found`]): no object on the platform can
//!   have that id, so it is "not found", exactly as the platform's own answer would be;
//! - an id the platform handed back ([`InvalidId::unexpected`]): the platform answered something
//!   we cannot use, a refusal like any other malformed answer.
//!
//! Grammars (`platform-apis.md`; `platform-specs/`): Graph object ids (pages, IG users and media,
//! Threads users and media, containers, photos, videos) are decimal strings; facebook page posts
//! are `{page}_{post}`; YouTube video ids are 11 characters of `[A-Za-z0-9_-]`; TikTok video ids
//! and X ids (posts, users, media) are 64-bit decimal numbers (X documents `^[0-9]{1,19}$`).
//! YouTube channel ids and TikTok open_ids never reach a URL (those calls say `mine=true` or use
//! the token alone), so they have no type here.

use std::fmt;

use url::Url;

use super::PlatformError;

/// Longest Graph id we accept. Meta's ids are 15–19 digits; a little room for growth,
/// but nothing like the kilobytes a hostile client may send.
const MAX_GRAPH_DIGITS: usize = 24;
/// 64-bit ids (TikTok videos, X): at most 19 digits, as X documents.
const MAX_INT64_DIGITS: usize = 19;
/// YouTube video ids are exactly 11 characters.
const YOUTUBE_VIDEO_ID_LEN: usize = 11;
/// How much of a refused value an error message repeats.
const SHOWN_CHARS: usize = 40;

/// A value that is not an id of the grammar it was checked against.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{shown} is not a valid {grammar}")]
pub struct InvalidId {
    grammar: &'static str,
    /// The value, escaped and cut short: it may be anything a client sent.
    shown: String,
}

impl InvalidId {
    fn new(grammar: &'static str, raw: &str) -> Self {
        let mut shown: String = raw.chars().take(SHOWN_CHARS).collect();
        if shown.len() < raw.len() {
            shown.push('…');
        }
        Self {
            grammar,
            shown: format!("{shown:?}"),
        }
    }

    /// The grammar the value was checked against (`graph id`, `youtube video id`…).
    pub fn grammar(&self) -> &'static str {
        self.grammar
    }

    /// For a client's or a stored value: no platform object can have this id.
    pub fn not_found(self) -> PlatformError {
        PlatformError::NotFound(self.to_string())
    }

    /// For an id the platform handed back: an answer we cannot use.
    pub fn unexpected(self) -> PlatformError {
        PlatformError::Rejected(format!("the platform answered with an unusable id: {self}"))
    }
}

fn decimal(raw: &str, max: usize) -> bool {
    (1..=max).contains(&raw.len()) && raw.bytes().all(|b| b.is_ascii_digit())
}

fn graph_grammar(raw: &str) -> bool {
    decimal(raw, MAX_GRAPH_DIGITS)
}

fn facebook_post_grammar(raw: &str) -> bool {
    match raw.split_once('_') {
        Some((page, post)) => graph_grammar(page) && graph_grammar(post),
        // Photos and videos are posts with their own plain id.
        None => graph_grammar(raw),
    }
}

fn youtube_video_grammar(raw: &str) -> bool {
    raw.len() == YOUTUBE_VIDEO_ID_LEN
        && raw
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn int64_grammar(raw: &str) -> bool {
    decimal(raw, MAX_INT64_DIGITS)
}

mod sealed {
    /// Keeps [`super::PathId`] to this module's checked types.
    pub trait Sealed {}
}

/// An id that may stand as a path segment: only the checked types of this module are.
pub trait PathId: sealed::Sealed {
    fn segment(&self) -> &str;
}

macro_rules! platform_id {
    ($(#[$doc:meta])* $name:ident, $grammar:literal, $check:path) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub struct $name(String);

        impl $name {
            #[doc = concat!("Checks `raw` against the ", $grammar, " grammar.")]
            pub fn parse(raw: &str) -> Result<Self, InvalidId> {
                if $check(raw) {
                    Ok(Self(raw.to_owned()))
                } else {
                    Err(InvalidId::new($grammar, raw))
                }
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl sealed::Sealed for $name {}

        impl PathId for $name {
            fn segment(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }
    };
}

platform_id!(
    /// A Graph object id (facebook pages, photos and videos; instagram users, containers and
    /// media; threads users, containers and media): decimal digits.
    GraphId,
    "graph id",
    graph_grammar
);
platform_id!(
    /// A facebook post: `{page}_{post}` (feed posts), or a photo's or video's own Graph id.
    FacebookPostId,
    "facebook post id",
    facebook_post_grammar
);
platform_id!(
    /// A YouTube video id: 11 characters of `[A-Za-z0-9_-]`.
    YoutubeVideoId,
    "youtube video id",
    youtube_video_grammar
);
platform_id!(
    /// A TikTok video id: a 64-bit decimal number.
    TiktokVideoId,
    "tiktok video id",
    int64_grammar
);
platform_id!(
    /// An X id (post, user, media): `^[0-9]{1,19}$`.
    XId,
    "x id",
    int64_grammar
);

/// A path on a platform host, made only of string literals and checked ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiPath {
    segments: Vec<String>,
}

impl ApiPath {
    /// `/{id}`.
    pub fn id(id: &impl PathId) -> Self {
        Self {
            segments: vec![id.segment().to_owned()],
        }
    }

    /// A literal path such as `"2/tweets"` or `"v2/video/query/"` (a trailing `/` is kept).
    /// Only literals are taken (`'static`), so nothing a client sent can be one.
    pub fn fixed(literal: &'static str) -> Self {
        Self {
            segments: Vec::new(),
        }
        .then(literal)
    }

    /// Appends literal segments (`"insights"`, `"media_publish"`, `"upload/append"`).
    pub fn then(mut self, literal: &'static str) -> Self {
        let literal = literal.strip_prefix('/').unwrap_or(literal);
        self.segments.extend(literal.split('/').map(str::to_owned));
        self
    }

    /// Appends an id as one segment.
    pub fn then_id(mut self, id: &impl PathId) -> Self {
        self.segments.push(id.segment().to_owned());
        self
    }

    /// `base` followed by the path, each segment percent-encoded as exactly one segment. `base`
    /// is configuration (a host and an optional path prefix such as `/graph/v24.0`).
    pub fn on(&self, base: &str) -> Result<Url, PlatformError> {
        let unusable =
            || PlatformError::Rejected(format!("the configured platform URL {base:?} is unusable"));
        let mut url = parsed_base(base).ok_or_else(unusable)?;
        url.set_query(None);
        url.set_fragment(None);
        {
            let mut path = url.path_segments_mut().map_err(|()| unusable())?;
            path.pop_if_empty();
            for segment in &self.segments {
                path.push(segment);
            }
        }
        Ok(url)
    }
}

thread_local! {
    /// The base URL this thread parsed last. A thread calls one platform's base over and over,
    /// and parsing it (host checks included) was a fifth of a platform call's URL work.
    static LAST_BASE: std::cell::RefCell<Option<(String, Url)>> =
        const { std::cell::RefCell::new(None) };
}

/// `base` parsed, from this thread's last parse when it is the same text.
fn parsed_base(base: &str) -> Option<Url> {
    LAST_BASE.with_borrow_mut(|last| {
        if let Some((text, url)) = last.as_ref()
            && text == base
        {
            return Some(url.clone());
        }
        let url = Url::parse(base).ok()?;
        *last = Some((base.to_owned(), url.clone()));
        Some(url)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Values a hostile client sends, none an id of any grammar.
    const HOSTILE: [&str; 14] = [
        "",
        ".",
        "..",
        "../../oidc/.well-known/openid-configuration",
        "..%2F..%2Foidc",
        "123/insights",
        "123?fields=access_token",
        "123#x",
        "123;x",
        "12 3",
        "123\n",
        "１２３",
        "123%00",
        "me",
    ];

    #[test]
    fn hostile_values_fit_no_grammar() {
        for raw in HOSTILE {
            assert!(GraphId::parse(raw).is_err(), "graph {raw:?}");
            assert!(FacebookPostId::parse(raw).is_err(), "facebook {raw:?}");
            assert!(TiktokVideoId::parse(raw).is_err(), "tiktok {raw:?}");
            assert!(XId::parse(raw).is_err(), "x {raw:?}");
        }
        for raw in [
            "../../abcde",
            "abc/def/ghi",
            "abcdefghij?",
            "abcdefghij#",
            "abcdefghij;",
            "abcde fghij",
            "abcdefghijé",
            "abcdef%2Fgh",
            "..........",
            "...........",
        ] {
            assert!(YoutubeVideoId::parse(raw).is_err(), "youtube {raw:?}");
        }
    }

    #[test]
    fn grammars() {
        struct Case {
            name: &'static str,
            raw: String,
            graph: bool,
            facebook: bool,
            youtube: bool,
            int64: bool,
        }
        let case = |name, raw: &str, graph, facebook, youtube, int64| Case {
            name,
            raw: raw.to_string(),
            graph,
            facebook,
            youtube,
            int64,
        };
        let cases = [
            case("page id", "1755847768034402", true, true, false, true),
            case("ig media id", "17889455560051444", true, true, false, true),
            case("one digit", "7", true, true, false, true),
            case(
                "page post",
                "1755847768034402_9000001",
                false,
                true,
                false,
                false,
            ),
            case(
                "post with two underscores",
                "1_2_3",
                false,
                false,
                false,
                false,
            ),
            case("post without page", "_123", false, false, false, false),
            case("post without post", "123_", false, false, false, false),
            case("youtube id", "dQw4w9WgXcQ", false, false, true, false),
            case(
                "youtube id with - and _",
                "a-b_c-d_e-f",
                false,
                false,
                true,
                false,
            ),
            case(
                "youtube id of digits",
                "12345678901",
                true,
                true,
                true,
                true,
            ),
            case(
                "youtube id too short",
                "dQw4w9WgXc",
                false,
                false,
                false,
                false,
            ),
            case(
                "youtube id too long",
                "dQw4w9WgXcQQ",
                false,
                false,
                false,
                false,
            ),
            case("tiktok id", "7231338487075638570", true, true, false, true),
            case(
                "20 digits",
                "17841400000000001900",
                true,
                true,
                false,
                false,
            ),
            case("24 digits", &"9".repeat(24), true, true, false, false),
            case("25 digits", &"9".repeat(25), false, false, false, false),
            case("overlong", &"1".repeat(4096), false, false, false, false),
            case("negative", "-1", false, false, false, false),
            case("plus", "+1", false, false, false, false),
            case("hex", "0x1f", false, false, false, false),
        ];
        for c in cases {
            assert_eq!(GraphId::parse(&c.raw).is_ok(), c.graph, "graph: {}", c.name);
            assert_eq!(
                FacebookPostId::parse(&c.raw).is_ok(),
                c.facebook,
                "facebook: {}",
                c.name
            );
            assert_eq!(
                YoutubeVideoId::parse(&c.raw).is_ok(),
                c.youtube,
                "youtube: {}",
                c.name
            );
            assert_eq!(
                TiktokVideoId::parse(&c.raw).is_ok(),
                c.int64,
                "tiktok: {}",
                c.name
            );
            assert_eq!(XId::parse(&c.raw).is_ok(), c.int64, "x: {}", c.name);
        }
    }

    #[test]
    fn paths_are_literals_and_ids_one_segment_each() {
        let page = GraphId::parse("123").unwrap();
        let url = ApiPath::id(&page)
            .then("insights")
            .on("http://127.0.0.1:9/graph/v24.0")
            .unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:9/graph/v24.0/123/insights");
        // A trailing slash on the base adds no empty segment; a literal's trailing slash stays.
        let url = ApiPath::fixed("v2/video/query/")
            .on("http://127.0.0.1:9/tiktok/")
            .unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:9/tiktok/v2/video/query/");
        let media = XId::parse("1880028106020515840").unwrap();
        let url = ApiPath::fixed("/2/media/upload")
            .then_id(&media)
            .then("append")
            .on("https://api.x.com")
            .unwrap();
        assert_eq!(
            url.as_str(),
            "https://api.x.com/2/media/upload/1880028106020515840/append"
        );
        let video = YoutubeVideoId::parse("a-b_c-d_e-f").unwrap();
        let url = ApiPath::fixed("vi")
            .then_id(&video)
            .on("http://h/youtube?x=1#f")
            .unwrap();
        assert_eq!(url.as_str(), "http://h/youtube/vi/a-b_c-d_e-f");
    }

    /// The thread's last parsed base is reused only for the same text: alternating bases (and an
    /// unusable one between them) each get their own URL.
    #[test]
    fn each_base_gets_its_own_url_however_calls_alternate() {
        let id = GraphId::parse("17").unwrap();
        for _ in 0..2 {
            for (base, expected) in [
                ("https://graph.threads.net", "https://graph.threads.net/17"),
                (
                    "http://127.0.0.1:9/graph/v24.0",
                    "http://127.0.0.1:9/graph/v24.0/17",
                ),
            ] {
                assert_eq!(ApiPath::id(&id).on(base).unwrap().as_str(), expected);
                assert!(ApiPath::id(&id).on("not a url").is_err());
                assert_eq!(ApiPath::id(&id).on(base).unwrap().as_str(), expected);
            }
        }
    }

    #[test]
    fn an_unusable_base_is_an_error_not_a_panic() {
        let id = GraphId::parse("1").unwrap();
        for base in ["", "not a url", "mailto:someone@example.com"] {
            assert!(ApiPath::id(&id).on(base).is_err(), "{base:?}");
        }
    }

    #[test]
    fn refusals_say_what_and_how_much() {
        let long = "9".repeat(500);
        let error = GraphId::parse(&long).unwrap_err();
        assert_eq!(error.grammar(), "graph id");
        assert!(error.to_string().len() < 100, "{error}");
        let error = GraphId::parse("../x").unwrap_err();
        assert_eq!(
            error.clone().not_found(),
            PlatformError::NotFound("\"../x\" is not a valid graph id".into())
        );
        assert!(matches!(error.unexpected(), PlatformError::Rejected(_)));
    }
}
