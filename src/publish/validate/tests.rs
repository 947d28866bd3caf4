//! Table-driven tests of the four steps, one row per platform rule.

use chrono::Utc;
use serde_json::{Value, json};

use super::*;
use crate::{
    domain::plan::{InstagramPost, MediaKind, MediaRef, Platform, PublishPlan, TiktokPost},
    error::{ApiError, ErrorCode},
};

fn body(platform: &str, text: Value, media: Value) -> Value {
    json!({"post": {
        "accountId": "6f1c1d3e-8a49-4b1a-9a57-3f2b8c1d0e11",
        "content": {"text": text, "mediaUrls": media, "platform": platform},
        "target": {"targetType": platform}
    }})
}

fn code_of(result: Result<impl std::fmt::Debug, ApiError>) -> String {
    match result {
        Ok(v) => format!("ok {v:?}"),
        Err(e) => e.code.as_str().to_string(),
    }
}

/// `ok`, or the error's code.
fn verdict(result: Result<PublishPlan, ApiError>) -> String {
    match result {
        Ok(_) => "ok".into(),
        Err(e) => e.code.as_str().to_string(),
    }
}

fn media(kind: MediaKind, i: usize) -> MediaRef {
    let (ext, content_type) = match kind {
        MediaKind::Image => ("jpg", "image/jpeg"),
        MediaKind::Video => ("mp4", "video/mp4"),
    };
    MediaRef {
        url: format!("https://cdn.example.com/{i}.{ext}"),
        kind,
        content_type: content_type.into(),
        size: Some(1000),
        dimensions: None,
    }
}

/// Runs steps 1, 3 and 4 with media of the given kinds (I = image, V = video).
fn plan(platform: &str, text: Value, kinds: &str) -> Result<PublishPlan, ApiError> {
    let urls: Vec<String> = kinds
        .chars()
        .enumerate()
        .map(|(i, _)| format!("https://cdn.example.com/{i}"))
        .collect();
    let request = parse_request(&body(platform, text, json!(urls)))?;
    media_slots(&request)?;
    let media = kinds
        .chars()
        .enumerate()
        .map(|(i, k)| {
            media(
                if k == 'V' {
                    MediaKind::Video
                } else {
                    MediaKind::Image
                },
                i,
            )
        })
        .collect();
    build_plan(&request, media, None)
}

fn post_type(result: Result<PublishPlan, ApiError>) -> String {
    match result {
        Ok(plan) => plan.post_type().as_str().to_string(),
        Err(e) => e.code.as_str().to_string(),
    }
}

#[test]
fn missing_parameters_are_named() {
    let cases = [
        (json!({}), "post"),
        (json!({"post": {}}), "accountId"),
        (json!({"post": {"accountId": "x"}}), "content"),
        (
            json!({"post": {"accountId": "x", "content": {}}}),
            "platform",
        ),
        (
            json!({"post": {"accountId": "x", "content": {"platform": "x"}}}),
            "target",
        ),
        (
            json!({"post": {"accountId": "x", "content": {"platform": "x"}, "target": {}}}),
            "targetType",
        ),
    ];
    for (body, name) in cases {
        let err = parse_request(&body).unwrap_err();
        assert_eq!(err.code, ErrorCode::MissingParameter, "{body}");
        assert!(err.message.ends_with(name), "{body}: {}", err.message);
    }
}

#[test]
fn request_shape_errors() {
    let mut b = body("myspace", json!("hi"), json!([]));
    assert_eq!(code_of(parse_request(&b)), "InvalidPlatform");
    b = body("x", json!("hi"), json!([]));
    b["post"]["target"]["targetType"] = json!("threads");
    assert_eq!(code_of(parse_request(&b)), "InvalidRequest");
    b = body("x", json!(42), json!([]));
    assert_eq!(code_of(parse_request(&b)), "InvalidTextFormat");
    // NUL anywhere, unknown fields and keys included (the body is stored as it came).
    for nul in [
        json!({"extra": "a\u{0}b"}),
        json!({"a\u{0}": 1}),
        json!([["\u{0}"]]),
    ] {
        b = body("x", json!("hi"), json!([]));
        b["post"]["content"]["extra"] = nul;
        assert_eq!(code_of(parse_request(&b)), "InvalidRequest", "{b}");
    }
    b = body("x", json!(["ok", 1]), json!([]));
    assert_eq!(code_of(parse_request(&b)), "InvalidTextFormat");
    b = body("x", json!("hi"), json!(5));
    assert_eq!(code_of(parse_request(&b)), "InvalidRequest");
    b = body("x", json!("hi"), json!([]));
    b["post"]["accountId"] = json!("not-a-uuid");
    assert_eq!(code_of(parse_request(&b)), "InvalidAccountId");
    b = body("tiktok", json!("hi"), json!("https://a/b.mp4"));
    b["post"]["tiktokOptions"] = json!({"draft": "yes"});
    assert_eq!(code_of(parse_request(&b)), "InvalidRequest");
}

#[test]
fn a_single_media_string_becomes_an_array() {
    let request = parse_request(&body("instagram", json!("c"), json!("https://a/1.jpg"))).unwrap();
    assert_eq!(request.media_urls, vec!["https://a/1.jpg".to_string()]);
}

#[test]
fn account_checks() {
    let request = parse_request(&body("x", json!("hi"), json!([]))).unwrap();
    let now = Utc::now();
    let ok = AccountFacts {
        platform: Platform::X,
        disabled: false,
        is_valid: true,
        token_expires_at: None,
        invalid_reason: None,
    };
    assert!(check_account(&request, &ok, now).is_ok());
    let cases = [
        (
            AccountFacts {
                disabled: true,
                ..ok.clone()
            },
            "AccountDisabled",
        ),
        (
            AccountFacts {
                platform: Platform::Threads,
                ..ok.clone()
            },
            "InvalidPlatform",
        ),
        (
            AccountFacts {
                is_valid: false,
                ..ok.clone()
            },
            "InvalidToken",
        ),
        (
            AccountFacts {
                is_valid: false,
                invalid_reason: Some("TokenExpired: platform said so"),
                ..ok.clone()
            },
            "TokenExpired",
        ),
        (
            AccountFacts {
                token_expires_at: Some(now - chrono::Duration::seconds(1)),
                ..ok.clone()
            },
            "TokenExpired",
        ),
    ];
    for (facts, code) in cases {
        assert_eq!(code_of(check_account(&request, &facts, now)), code);
    }
}

/// Every row of the platform rules table (spec §4.1) and the media counts of §8.
#[test]
fn platform_rules_table() {
    let many = |n: usize| "I".repeat(n);
    let cases: Vec<(&str, Value, String, &str)> = vec![
        // facebook: 0 media = text; 1 image = photo; 2-10 images = album; 1 video = video
        ("facebook", json!("hi"), String::new(), "text"),
        ("facebook", json!("hi"), "I".into(), "photo"),
        ("facebook", json!("hi"), many(2), "album"),
        ("facebook", json!("hi"), many(10), "album"),
        ("facebook", json!("hi"), many(11), "InvalidCarouselSize"),
        ("facebook", json!("hi"), "V".into(), "video"),
        ("facebook", json!("hi"), "IV".into(), "InvalidMediaType"),
        ("facebook", Value::Null, String::new(), "TextRequired"),
        ("facebook", json!(""), "I".into(), "TextRequired"),
        (
            "facebook",
            json!(["a", "b"]),
            String::new(),
            "InvalidTextFormat",
        ),
        // instagram: media required; 1 image = photo; 2-10 = carousel; 1 video = reels
        ("instagram", json!("hi"), String::new(), "MediaRequired"),
        ("instagram", json!("hi"), "I".into(), "photo"),
        ("instagram", json!("hi"), many(2), "carousel"),
        ("instagram", json!("hi"), "IVI".into(), "carousel"),
        ("instagram", json!("hi"), many(10), "carousel"),
        ("instagram", json!("hi"), many(11), "InvalidCarouselSize"),
        ("instagram", json!("hi"), "V".into(), "reels"),
        ("instagram", Value::Null, "I".into(), "TextRequired"),
        // threads: string text + 0 media = text; 1 image; 2-20 = carousel; 1 video;
        // array text with 0-1 media = thread
        ("threads", json!("hi"), String::new(), "text"),
        ("threads", Value::Null, String::new(), "TextRequired"),
        ("threads", json!("hi"), "I".into(), "photo"),
        ("threads", Value::Null, "I".into(), "photo"),
        ("threads", json!("hi"), many(2), "carousel"),
        ("threads", json!("hi"), many(20), "carousel"),
        ("threads", json!("hi"), many(21), "InvalidCarouselSize"),
        ("threads", json!("hi"), "V".into(), "video"),
        ("threads", json!(["a", "b", "c"]), String::new(), "thread"),
        ("threads", json!(["a", "b"]), "I".into(), "thread"),
        ("threads", json!(["a", "b"]), many(2), "InvalidCarouselSize"),
        ("threads", json!(["a", ""]), String::new(), "TextRequired"),
        (
            "threads",
            json!("a".repeat(501)),
            String::new(),
            "TextTooLong",
        ),
        ("threads", json!("a".repeat(500)), String::new(), "text"),
        (
            "threads",
            json!(["ok", "a".repeat(501)]),
            String::new(),
            "TextTooLong",
        ),
        // x: string text 0 media = tweet; 1-4 images; or 1 video; array = thread
        ("x", json!("hi"), String::new(), "text"),
        ("x", json!("hi"), "I".into(), "photo"),
        ("x", json!("hi"), many(4), "photo"),
        ("x", json!("hi"), many(5), "InvalidCarouselSize"),
        ("x", json!("hi"), "V".into(), "video"),
        ("x", json!("hi"), "IV".into(), "InvalidMediaType"),
        ("x", json!("hi"), "VV".into(), "InvalidMediaType"),
        ("x", json!(["a", "b"]), String::new(), "thread"),
        ("x", Value::Null, String::new(), "TextRequired"),
        ("x", Value::Null, "I".into(), "photo"),
        // tiktok: 1 video = video post; 1-35 images = photo carousel
        ("tiktok", json!("hi"), "V".into(), "video"),
        ("tiktok", Value::Null, "V".into(), "video"),
        ("tiktok", json!("hi"), "I".into(), "carousel"),
        ("tiktok", json!("hi"), many(35), "carousel"),
        ("tiktok", json!("hi"), many(36), "InvalidCarouselSize"),
        ("tiktok", json!("hi"), String::new(), "MediaRequired"),
        ("tiktok", json!("hi"), "VI".into(), "InvalidMediaType"),
        ("tiktok", json!(["a", "b"]), "V".into(), "InvalidTextFormat"),
        // youtube: mediaUrls[0] the video; optional [1] thumbnail; title/description in text
        (
            "youtube",
            json!("Title\n\nDescription"),
            "V".into(),
            "video",
        ),
        (
            "youtube",
            json!("Title\n\nDescription"),
            "VI".into(),
            "video",
        ),
        ("youtube", json!("Title"), String::new(), "MediaRequired"),
        (
            "youtube",
            json!("Title"),
            "VII".into(),
            "InvalidCarouselSize",
        ),
        ("youtube", Value::Null, "V".into(), "TextRequired"),
        ("youtube", json!("t".repeat(101)), "V".into(), "TextTooLong"),
    ];
    for (platform, text, kinds, expected) in cases {
        assert_eq!(
            post_type(plan(platform, text.clone(), &kinds)),
            expected,
            "{platform} text={text} media={kinds}"
        );
    }
}

#[test]
fn media_positions_accept_the_platform_formats() {
    let request = |platform: &str, media: Value| {
        parse_request(&body(platform, json!("T\n\nD"), media)).unwrap()
    };
    let threads = media_slots(&request("threads", json!(["a"]))).unwrap();
    assert!(threads[0].webp && threads[0].videos);
    let facebook = media_slots(&request("facebook", json!(["a"]))).unwrap();
    assert!(!facebook[0].webp);
    let tiktok = media_slots(&request("tiktok", json!(["a"]))).unwrap();
    assert!(tiktok[0].webp && !tiktok[0].png);
    let youtube = media_slots(&request("youtube", json!(["v", "t"]))).unwrap();
    assert!(youtube[0].videos && !youtube[0].images);
    assert!(youtube[1].images && !youtube[1].videos);
}

#[test]
fn youtube_title_and_description_split_at_the_first_blank_line() {
    assert_eq!(
        split_title("My title\n\nLine one\n\nLine two"),
        ("My title".into(), "Line one\n\nLine two".into())
    );
    assert_eq!(
        split_title("Only a title"),
        ("Only a title".into(), String::new())
    );
    assert_eq!(
        split_title("Title\r\n  \r\nDesc"),
        ("Title".into(), "Desc".into())
    );
}

#[test]
fn tweets_are_truncated_by_characters_never_splitting_one() {
    let ascii = "a".repeat(300);
    assert_eq!(truncate_tweet(&ascii).chars().count(), 280);
    let cjk = "漢".repeat(300);
    assert_eq!(truncate_tweet(&cjk), "漢".repeat(280));
    // 279 characters, then a family emoji of 7 code points: it does not fit and is dropped
    // whole rather than split.
    let family = "👨\u{200d}👩\u{200d}👧\u{200d}👦";
    let text = format!("{}{family}tail", "b".repeat(279));
    assert_eq!(truncate_tweet(&text), "b".repeat(279));
    assert_eq!(truncate_tweet("short"), "short");
}

#[test]
fn tiktok_draft_and_instagram_cover() {
    let mut b = body("tiktok", json!("c"), json!(["https://a/v.mp4"]));
    b["post"]["tiktokOptions"] = json!({"draft": true});
    let request = parse_request(&b).unwrap();
    let plan = build_plan(&request, vec![media(MediaKind::Video, 0)], None).unwrap();
    assert!(matches!(
        plan,
        PublishPlan::Tiktok(TiktokPost { draft: true, .. })
    ));

    let request =
        parse_request(&body("instagram", json!("c"), json!(["https://a/v.mp4"]))).unwrap();
    let cover = media(MediaKind::Image, 9);
    let plan = build_plan(
        &request,
        vec![media(MediaKind::Video, 0)],
        Some(cover.clone()),
    )
    .unwrap();
    assert!(
        matches!(plan, PublishPlan::Instagram(InstagramPost::Reel { cover_url: Some(ref u), .. }) if *u == cover.url)
    );
    let request =
        parse_request(&body("instagram", json!("c"), json!(["https://a/i.jpg"]))).unwrap();
    assert_eq!(
        code_of(build_plan(
            &request,
            vec![media(MediaKind::Image, 0)],
            Some(cover)
        )),
        "InvalidRequest"
    );
}

#[test]
fn instagram_images_of_a_known_size_keep_to_its_aspect_ratios() {
    let sized = |i: usize, width: u32, height: u32| MediaRef {
        dimensions: Some((width, height)),
        ..media(MediaKind::Image, i)
    };
    let one = |image: MediaRef| {
        let request =
            parse_request(&body("instagram", json!("c"), json!(["https://a/i.jpg"]))).unwrap();
        verdict(build_plan(&request, vec![image], None))
    };
    // 4:5, square and 1.91:1 are the bounds and what lies between.
    for (width, height) in [(1080, 1350), (1080, 1080), (1910, 1000), (1080, 566)] {
        assert_eq!(one(sized(0, width, height)), "ok", "{width}x{height}");
    }
    for (width, height) in [
        (1080, 1351),
        (1080, 1920),
        (1911, 1000),
        (4000, 100),
        (100, 0),
    ] {
        assert_eq!(
            one(sized(0, width, height)),
            "InvalidMediaType",
            "{width}x{height}"
        );
    }
    // Every image of a carousel; sizes that are not known are left to the platform.
    let request = parse_request(&body(
        "instagram",
        json!("c"),
        json!(["https://a/1.jpg", "https://a/2.jpg", "https://a/3.jpg"]),
    ))
    .unwrap();
    let items = vec![
        media(MediaKind::Image, 0),
        sized(1, 1080, 1080),
        sized(2, 720, 1280),
    ];
    assert_eq!(
        verdict(build_plan(&request, items, None)),
        "InvalidMediaType"
    );
    // Other platforms take any aspect ratio.
    let request = parse_request(&body("facebook", json!("c"), json!(["https://a/i.jpg"]))).unwrap();
    assert_eq!(
        verdict(build_plan(&request, vec![sized(0, 4000, 100)], None)),
        "ok"
    );
}
