//! TikTok and YouTube adapters against the simulator, plus wire-level checks of the simulator
//! where the protocol matters (chunk ranges, resumable sessions, error formats).

use reqwest::StatusCode;
use serde_json::{Value, json};
use service_sim::state::{FaultKind, FaultSpec, Processing, SimAccount};
use social_service::{
    domain::plan::{MediaKind, MediaRef, PublishPlan, TiktokContent, TiktokPost, YoutubePost},
    platforms::{Pending, PlatformError},
};

use crate::adapters::Harness;
use crate::helpers::fault;

fn tiktok_video(video: MediaRef, draft: bool) -> PublishPlan {
    PublishPlan::Tiktok(TiktokPost {
        caption: "Sunset timelapse #sky".into(),
        content: TiktokContent::Video(video),
        draft,
    })
}

fn tiktok_photos(images: Vec<MediaRef>, draft: bool) -> PublishPlan {
    PublishPlan::Tiktok(TiktokPost {
        caption: "Three shots from the hike\nmore in bio".into(),
        content: TiktokContent::Photos(images),
        draft,
    })
}

fn youtube_video(video: MediaRef, thumbnail: Option<MediaRef>) -> PublishPlan {
    PublishPlan::Youtube(YoutubePost {
        title: "How we built it".into(),
        description: "A long description.\nWith two lines.".into(),
        video,
        thumbnail,
    })
}

/// A media URL on the simulator that answers 404 (validation would have refused it; the point
/// is what happens when the platform cannot fetch it later).
fn missing(h: &Harness, name: &str, kind: MediaKind, content_type: &str) -> MediaRef {
    MediaRef {
        url: format!("{}/media/{name}", h.sim.base_url),
        kind,
        content_type: content_type.into(),
        size: None,
        dimensions: None,
    }
}

fn step_ids(steps: &Value, name: &str) -> Vec<String> {
    steps["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"] == name)
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect()
}

/// Whether an error is the one a fault should produce.
type ErrorCheck = fn(&PlatformError) -> bool;

fn processing(mode: Processing) -> FaultSpec {
    FaultSpec {
        processing: mode,
        ..FaultSpec::default()
    }
}

fn published(
    h: &Harness,
    platform: &str,
    account: &SimAccount,
) -> Vec<service_sim::state::PublishedItem> {
    h.sim
        .state()
        .published(Some(platform), Some(&account.external_id))
}

// ---------------------------------------------------------------------------------------------
// TikTok

#[actix_web::test]
async fn tiktok_file_upload_sends_every_chunk() {
    let mut h = Harness::start().await;
    h.config.upload_chunk_bytes = 5_000_000;
    let account = h.account("tiktok", "Creator");
    let video = h.media("sized/12000000.mp4").await;
    let (result, steps) = h.publish(&account, &tiktok_video(video, false)).await;
    let done = result.unwrap();

    let items = published(&h, "tiktok", &account);
    assert_eq!(items.len(), 1);
    let item = &items[0];
    assert_eq!(item.id, done.post_id);
    assert_eq!(item.kind, "video");
    assert_eq!(item.text.as_deref(), Some("Sunset timelapse #sky"));
    assert_eq!(item.extra["privacy_level"], "PUBLIC_TO_EVERYONE");
    assert_eq!(item.extra["source"], "FILE_UPLOAD");
    // 12,000,000 bytes at a 5 MiB chunk: two chunks, the second carrying the remainder.
    assert_eq!(item.extra["total_chunk_count"], 2);
    assert_eq!(item.extra["uploaded_bytes"], 12_000_000);
    assert_eq!(item.extra["video_size"], 12_000_000);
    assert!(
        done.post_id.starts_with('7'),
        "public post id: {}",
        done.post_id
    );
    assert_eq!(steps["final_started"], true);
    assert_eq!(step_ids(&steps, "publish_id").len(), 1);
    assert!(done.warnings.is_empty());
}

#[actix_web::test]
async fn tiktok_small_file_upload_is_one_chunk() {
    let h = Harness::start().await;
    let account = h.account("tiktok", "Creator");
    let video = h.media("sample.mov").await;
    let (result, _) = h.publish(&account, &tiktok_video(video, false)).await;
    result.unwrap();
    let items = published(&h, "tiktok", &account);
    assert_eq!(items[0].extra["total_chunk_count"], 1);
    assert_eq!(
        items[0].extra["uploaded_bytes"],
        service_sim::media::SAMPLE_MOV.len()
    );
}

#[actix_web::test]
async fn tiktok_pull_from_url_video() {
    let mut h = Harness::start().await;
    h.config.tiktok_video_source = "PULL_FROM_URL".into();
    let account = h.account("tiktok", "Creator");
    let video = h.media("sample.mp4").await;
    let url = video.url.clone();
    let (result, steps) = h.publish(&account, &tiktok_video(video, false)).await;
    let done = result.unwrap();
    let items = published(&h, "tiktok", &account);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].id, done.post_id);
    assert_eq!(items[0].kind, "video");
    assert_eq!(items[0].media, vec![url]);
    assert_eq!(items[0].extra["source"], "PULL_FROM_URL");
    assert_eq!(steps["final_started"], true);
    assert_eq!(step_ids(&steps, "publish_id").len(), 1);
}

#[actix_web::test]
async fn tiktok_draft_video_goes_to_the_inbox() {
    for source in ["FILE_UPLOAD", "PULL_FROM_URL"] {
        let mut h = Harness::start().await;
        h.config.tiktok_video_source = source.into();
        let account = h.account("tiktok", "Creator");
        let video = h.media("sample.mp4").await;
        let (result, steps) = h.publish(&account, &tiktok_video(video, true)).await;
        let done = result.unwrap();
        // A draft has no public post: its id is the publish_id.
        assert_eq!(
            vec![done.post_id.clone()],
            step_ids(&steps, "publish_id"),
            "{source}"
        );
        let items = published(&h, "tiktok", &account);
        assert_eq!(items.len(), 1, "{source}");
        assert_eq!(items[0].kind, "inbox_video", "{source}");
        assert_eq!(items[0].id, done.post_id, "{source}");
        assert_eq!(items[0].extra["privacy_level"], Value::Null, "{source}");
    }
}

#[actix_web::test]
async fn tiktok_photo_carousel_of_three() {
    let h = Harness::start().await;
    let account = h.account("tiktok", "Creator");
    let images = vec![
        h.media("sample.jpg").await,
        h.media("sample.webp").await,
        h.media("sample.jpg").await,
    ];
    let urls: Vec<String> = images.iter().map(|i| i.url.clone()).collect();
    let (result, steps) = h.publish(&account, &tiktok_photos(images, false)).await;
    let done = result.unwrap();
    let items = published(&h, "tiktok", &account);
    assert_eq!(items.len(), 1);
    let item = &items[0];
    assert_eq!(item.id, done.post_id);
    assert_eq!(item.kind, "photo_post");
    assert_eq!(item.media, urls);
    assert_eq!(
        item.text.as_deref(),
        Some("Three shots from the hike\nmore in bio")
    );
    assert_eq!(item.extra["title"], "Three shots from the hike");
    assert_eq!(item.extra["privacy_level"], "PUBLIC_TO_EVERYONE");
    assert_eq!(steps["final_started"], true);
    assert_eq!(step_ids(&steps, "publish_id").len(), 1);
}

#[actix_web::test]
async fn tiktok_draft_photos_go_to_the_inbox() {
    let h = Harness::start().await;
    let account = h.account("tiktok", "Creator");
    let images = vec![h.media("sample.jpg").await, h.media("sample.jpg").await];
    let (result, steps) = h.publish(&account, &tiktok_photos(images, true)).await;
    let done = result.unwrap();
    assert_eq!(vec![done.post_id.clone()], step_ids(&steps, "publish_id"));
    let items = published(&h, "tiktok", &account);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].kind, "inbox_photo");
    assert_eq!(items[0].media.len(), 2);
}

#[actix_web::test]
async fn tiktok_png_photos_fail_the_format_check() {
    let h = Harness::start().await;
    let account = h.account("tiktok", "Creator");
    let images = vec![h.media("sample.png").await];
    let (result, _) = h.publish(&account, &tiktok_photos(images, false)).await;
    match result {
        Err(PlatformError::ProcessingFailed(m)) => {
            assert!(m.contains("file_format_check_failed"), "{m}")
        }
        other => panic!("expected ProcessingFailed, got {other:?}"),
    }
    assert!(published(&h, "tiktok", &account).is_empty());
}

#[actix_web::test]
async fn tiktok_faults_are_classified() {
    let h = Harness::start().await;
    let video = h.media("sample.mp4").await;
    let cases: [(FaultKind, ErrorCheck); 5] = [
        (FaultKind::TokenExpired, |e| {
            matches!(e, PlatformError::TokenExpired(_))
        }),
        (
            FaultKind::TokenRevoked,
            |e| matches!(e, PlatformError::TokenInvalid(m) if m.contains("revoked")),
        ),
        (
            FaultKind::Permission,
            |e| matches!(e, PlatformError::Permission(m) if m.contains("scope_not_authorized")),
        ),
        (FaultKind::RateLimit, |e| {
            matches!(
                e,
                PlatformError::RateLimited {
                    retry_after: 60,
                    ..
                }
            )
        }),
        (
            FaultKind::ServerError,
            |e| matches!(e, PlatformError::Transient(m) if m.contains("internal_error")),
        ),
    ];
    for (kind, expected) in cases {
        let account = h.account("tiktok", "Creator");
        h.sim
            .state()
            .set_faults("tiktok", &account.external_id, fault(kind));
        let (result, steps) = h
            .publish(&account, &tiktok_video(video.clone(), false))
            .await;
        let err = result.unwrap_err();
        assert!(expected(&err), "{kind:?}: {err:?}");
        assert!(published(&h, "tiktok", &account).is_empty(), "{kind:?}");
        assert_eq!(steps["final_started"], false, "{kind:?}");
    }
}

#[actix_web::test]
async fn tiktok_upload_failure_keeps_the_publish_id() {
    let mut h = Harness::start().await;
    h.config.upload_chunk_bytes = 5_000_000;
    let account = h.account("tiktok", "Creator");
    // PUTs to the upload URL fail; the creator_info and init calls go through.
    h.sim.state().set_faults(
        "tiktok",
        &account.external_id,
        FaultSpec {
            error: Some(FaultKind::ServerError),
            path_contains: Some("/upload/".into()),
            ..FaultSpec::default()
        },
    );
    let video = h.media("sized/12000000.mp4").await;
    let (result, steps) = h.publish(&account, &tiktok_video(video, false)).await;
    assert!(
        matches!(result, Err(PlatformError::Transient(_))),
        "{result:?}"
    );
    // The publish_id was recorded before any chunk went up; the first chunk failed, so the
    // final one was never started.
    assert_eq!(step_ids(&steps, "publish_id").len(), 1);
    assert_eq!(steps["final_started"], false);
    assert!(published(&h, "tiktok", &account).is_empty());
}

#[actix_web::test]
async fn tiktok_processing_still_running_or_failed() {
    let mut h = Harness::start().await;
    h.config.processing_timeout_secs = 1;
    let video = h.media("sample.mp4").await;
    for mode in [Processing::Never, Processing::Fail] {
        let account = h.account("tiktok", "Creator");
        h.sim
            .state()
            .set_faults("tiktok", &account.external_id, processing(mode));
        let (result, steps) = h
            .publish(&account, &tiktok_video(video.clone(), false))
            .await;
        let publish_id = step_ids(&steps, "publish_id").remove(0);
        match (mode, result) {
            // Still processing at our deadline: TikTok has the post and may yet publish it,
            // so it is not a failure; what is left is a check of this publish_id.
            (Processing::Never, Err(PlatformError::StillProcessing(pending))) => assert_eq!(
                *pending,
                Pending::TiktokPublish {
                    publish_id: publish_id.clone()
                }
            ),
            (Processing::Fail, Err(PlatformError::ProcessingFailed(_))) => {}
            (mode, result) => panic!("{mode:?}: {result:?}"),
        }
        assert_eq!(steps["final_started"], true, "{mode:?}");
        assert!(published(&h, "tiktok", &account).is_empty(), "{mode:?}");
    }
}

#[actix_web::test]
async fn tiktok_pull_of_a_missing_file_is_a_media_fetch_error() {
    let mut h = Harness::start().await;
    h.config.tiktok_video_source = "PULL_FROM_URL".into();
    let account = h.account("tiktok", "Creator");
    let video = missing(&h, "missing.mp4", MediaKind::Video, "video/mp4");
    let (result, _) = h.publish(&account, &tiktok_video(video, false)).await;
    match result {
        Err(PlatformError::MediaFetch(m)) => assert!(m.contains("video_pull_failed"), "{m}"),
        other => panic!("expected MediaFetch, got {other:?}"),
    }
    let image = missing(&h, "missing.jpg", MediaKind::Image, "image/jpeg");
    let images = vec![h.media("sample.jpg").await, image];
    let (result, _) = h.publish(&account, &tiktok_photos(images, false)).await;
    match result {
        Err(PlatformError::MediaFetch(m)) => assert!(m.contains("photo_pull_failed"), "{m}"),
        other => panic!("expected MediaFetch, got {other:?}"),
    }
    assert!(published(&h, "tiktok", &account).is_empty());
}

#[actix_web::test]
async fn tiktok_sim_speaks_the_envelope_and_checks_ranges() {
    let h = Harness::start().await;
    let base = format!("{}/tiktok", h.sim.base_url);
    let client = reqwest::Client::new();

    // A bad token: 401 in TikTok's envelope.
    let response = client
        .post(format!("{base}/v2/post/publish/creator_info/query/"))
        .bearer_auth("act-not-a-token")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "access_token_invalid");
    assert_eq!(body["data"], json!({}));
    assert!(
        body["error"]["log_id"]
            .as_str()
            .is_some_and(|l| !l.is_empty())
    );

    let account = h.account("tiktok", "Creator");
    let token = account.access_token.clone();
    let init = |source_info: Value| {
        client
            .post(format!("{base}/v2/post/publish/video/init/"))
            .bearer_auth(&token)
            .header("Content-Type", "application/json; charset=UTF-8")
            .body(
                json!({"post_info": {"title": "t", "privacy_level": "SELF_ONLY"}, "source_info": source_info})
                    .to_string(),
            )
            .send()
    };

    // A chunk count that is not floor(size / chunk_size) is refused.
    let response = init(json!({"source": "FILE_UPLOAD", "video_size": 12_000_000, "chunk_size": 5_000_000, "total_chunk_count": 3}))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "invalid_params");

    // A small file as one chunk; a wrong range is refused, the right one completes it.
    let response = init(json!({"source": "FILE_UPLOAD", "video_size": 1000, "chunk_size": 1000, "total_chunk_count": 1}))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "ok");
    let upload_url = body["data"]["upload_url"].as_str().unwrap().to_string();
    let publish_id = body["data"]["publish_id"].as_str().unwrap().to_string();
    assert!(upload_url.starts_with(&h.sim.base_url), "{upload_url}");

    let put = |range: &str, len: usize| {
        client
            .put(&upload_url)
            .header("Content-Type", "video/mp4")
            .header("Content-Range", range.to_string())
            .body(vec![0u8; len])
            .send()
    };
    let response = put("bytes 0-499/1000", 500).await.unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "invalid_file_upload");
    let response = put("bytes 0-999/1000", 1000).await.unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);

    // Status: SELF_ONLY completes without a public id.
    let status = || {
        client
            .post(format!("{base}/v2/post/publish/status/fetch/"))
            .bearer_auth(&token)
            .header("Content-Type", "application/json; charset=UTF-8")
            .body(json!({"publish_id": publish_id}).to_string())
            .send()
    };
    let body: Value = status().await.unwrap().json().await.unwrap();
    assert_eq!(body["data"]["status"], "PROCESSING_UPLOAD");
    assert_eq!(body["data"]["uploaded_bytes"], 1000);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let body: Value = status().await.unwrap().json().await.unwrap();
    assert_eq!(body["data"]["status"], "PUBLISH_COMPLETE");
    assert_eq!(body["data"]["publicaly_available_post_id"], json!([]));
    // Asking again does not publish twice.
    status().await.unwrap();
    assert_eq!(published(&h, "tiktok", &account).len(), 1);
    // The bad chunk plan and the short chunk.
    assert_eq!(
        h.take_violation_rules(),
        ["invalid_params", "invalid_file_upload"]
    );
}

// ---------------------------------------------------------------------------------------------
// YouTube

#[actix_web::test]
async fn youtube_video_with_a_thumbnail() {
    let h = Harness::start().await;
    let account = h.account("youtube", "Channel");
    let video = h.media("sample.mp4").await;
    let thumbnail = h.media("sample.jpg").await;
    let (result, steps) = h
        .publish(&account, &youtube_video(video, Some(thumbnail)))
        .await;
    let done = result.unwrap();
    assert!(done.warnings.is_empty(), "{:?}", done.warnings);

    let items = published(&h, "youtube", &account);
    assert_eq!(items.len(), 1);
    let item = &items[0];
    assert_eq!(item.id, done.post_id);
    assert_eq!(item.kind, "video");
    assert_eq!(item.extra["title"], "How we built it");
    assert_eq!(
        item.text.as_deref(),
        Some("A long description.\nWith two lines.")
    );
    assert_eq!(item.extra["bytes"], service_sim::media::SAMPLE_MP4.len());
    assert_eq!(item.extra["thumbnail"]["content_type"], "image/jpeg");
    assert_eq!(
        item.extra["thumbnail"]["bytes"],
        service_sim::media::SAMPLE_JPG.len()
    );

    assert_eq!(steps["final_started"], true);
    let sessions = step_ids(&steps, "upload_session");
    assert_eq!(sessions.len(), 1);
    assert!(sessions[0].contains("upload_id="), "{}", sessions[0]);
    assert_eq!(step_ids(&steps, "video"), vec![done.post_id.clone()]);
}

#[actix_web::test]
async fn youtube_video_without_a_thumbnail() {
    let h = Harness::start().await;
    let account = h.account("youtube", "Channel");
    let video = h.media("sample.mov").await;
    let (result, _) = h.publish(&account, &youtube_video(video, None)).await;
    let done = result.unwrap();
    let items = published(&h, "youtube", &account);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].id, done.post_id);
    assert_eq!(items[0].extra["thumbnail"], Value::Null);
    assert_eq!(items[0].extra["content_type"], "video/quicktime");
}

/// Uploads go to `youtube_upload_url`, separate from the data host: with the upload host
/// unreachable nothing is uploaded; pointed back at the simulator, the video goes out.
#[actix_web::test]
async fn youtube_uploads_go_to_the_upload_host() {
    let mut h = Harness::start().await;
    // Port 1 on loopback: nothing listens there.
    h.config.youtube_upload_url = "http://127.0.0.1:1/youtube".into();
    let account = h.account("youtube", "Channel");
    let plan = youtube_video(h.media("sample.mp4").await, None);
    let (result, _) = h.publish(&account, &plan).await;
    assert!(result.is_err(), "{result:?}");
    assert_eq!(published(&h, "youtube", &account).len(), 0);

    h.config.youtube_upload_url = h.config.youtube_url.clone();
    let (result, _) = h.publish(&account, &plan).await;
    result.unwrap();
    assert_eq!(published(&h, "youtube", &account).len(), 1);
}

#[actix_web::test]
async fn youtube_thumbnail_failure_is_a_warning() {
    let h = Harness::start().await;
    let video = h.media("sample.mp4").await;

    // The platform refuses thumbnails.set.
    let account = h.account("youtube", "Channel");
    h.sim.state().set_faults(
        "youtube",
        &account.external_id,
        FaultSpec {
            error: Some(FaultKind::ServerError),
            path_contains: Some("thumbnails".into()),
            ..FaultSpec::default()
        },
    );
    let thumbnail = h.media("sample.jpg").await;
    let (result, _) = h
        .publish(&account, &youtube_video(video.clone(), Some(thumbnail)))
        .await;
    let done = result.unwrap();
    assert_eq!(done.warnings.len(), 1, "{:?}", done.warnings);
    assert!(
        done.warnings[0].contains("thumbnail"),
        "{}",
        done.warnings[0]
    );
    let items = published(&h, "youtube", &account);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].extra["thumbnail"], Value::Null);

    // A format YouTube does not take for thumbnails.
    let account = h.account("youtube", "Channel");
    let thumbnail = h.media("sample.webp").await;
    let (result, _) = h
        .publish(&account, &youtube_video(video, Some(thumbnail)))
        .await;
    let done = result.unwrap();
    assert_eq!(done.warnings.len(), 1);
    assert!(
        done.warnings[0].contains("invalidImage"),
        "{}",
        done.warnings[0]
    );
}

#[actix_web::test]
async fn youtube_faults_are_classified() {
    let h = Harness::start().await;
    let video = h.media("sample.mp4").await;
    let cases: [(FaultKind, ErrorCheck); 5] = [
        (FaultKind::TokenExpired, |e| {
            matches!(e, PlatformError::TokenExpired(_))
        }),
        (FaultKind::TokenRevoked, |e| {
            matches!(e, PlatformError::TokenInvalid(_))
        }),
        (FaultKind::Permission, |e| {
            matches!(e, PlatformError::Permission(_))
        }),
        (
            FaultKind::RateLimit,
            |e| matches!(e, PlatformError::RateLimited { retry_after, .. } if (1..=25 * 3600).contains(retry_after)),
        ),
        (FaultKind::ServerError, |e| {
            matches!(e, PlatformError::Transient(_))
        }),
    ];
    for (kind, expected) in cases {
        let account = h.account("youtube", "Channel");
        h.sim
            .state()
            .set_faults("youtube", &account.external_id, fault(kind));
        let (result, steps) = h
            .publish(&account, &youtube_video(video.clone(), None))
            .await;
        let err = result.unwrap_err();
        assert!(expected(&err), "{kind:?}: {err:?}");
        assert!(published(&h, "youtube", &account).is_empty(), "{kind:?}");
        assert_eq!(steps["final_started"], false, "{kind:?}");
    }
}

#[actix_web::test]
async fn youtube_processing_still_running_or_failed() {
    let mut h = Harness::start().await;
    h.config.processing_timeout_secs = 1;
    let video = h.media("sample.mp4").await;
    for mode in [Processing::Never, Processing::Fail] {
        let account = h.account("youtube", "Channel");
        h.sim
            .state()
            .set_faults("youtube", &account.external_id, processing(mode));
        let (result, steps) = h
            .publish(&account, &youtube_video(video.clone(), None))
            .await;
        match (mode, result) {
            // Still `uploaded` at our deadline: the video exists and may yet be processed.
            (Processing::Never, Err(PlatformError::StillProcessing(pending))) => {
                assert_eq!(
                    *pending,
                    Pending::YoutubeVideo {
                        video_id: step_ids(&steps, "video").remove(0),
                        thumbnail: None
                    }
                )
            }
            (Processing::Fail, Err(PlatformError::ProcessingFailed(m))) => {
                assert!(m.contains("conversion"), "{m}")
            }
            (mode, other) => panic!("{mode:?}: {other:?}"),
        }
        // The upload itself went through; the video id is known for settling.
        assert_eq!(step_ids(&steps, "video").len(), 1, "{mode:?}");
    }
}

#[actix_web::test]
async fn youtube_missing_video_is_a_media_fetch_error() {
    let h = Harness::start().await;
    let account = h.account("youtube", "Channel");
    let video = missing(&h, "missing.mp4", MediaKind::Video, "video/mp4");
    let (result, steps) = h.publish(&account, &youtube_video(video, None)).await;
    assert!(
        matches!(result, Err(PlatformError::MediaFetch(_))),
        "{result:?}"
    );
    assert_eq!(steps["final_started"], false);
    assert!(published(&h, "youtube", &account).is_empty());
}

/// Opens a resumable session directly; returns the session URI.
async fn open_session(
    client: &reqwest::Client,
    h: &Harness,
    token: &str,
    title: &str,
    length: u64,
) -> reqwest::Response {
    client
        .post(format!(
            "{}/youtube/upload/youtube/v3/videos?uploadType=resumable&part=snippet,status",
            h.sim.base_url
        ))
        .bearer_auth(token)
        .header("Content-Type", "application/json; charset=UTF-8")
        .header("X-Upload-Content-Length", length.to_string())
        .header("X-Upload-Content-Type", "video/mp4")
        .body(json!({"snippet": {"title": title, "description": "d"}, "status": {"privacyStatus": "private"}}).to_string())
        .send()
        .await
        .unwrap()
}

#[actix_web::test]
async fn youtube_sim_resumable_session_in_chunks() {
    let h = Harness::start().await;
    let client = reqwest::Client::new();
    let account = h.account("youtube", "Channel");
    const CHUNK: usize = 256 * 1024;
    let total = (CHUNK * 2 + 1000) as u64;

    let response = open_session(&client, &h, &account.access_token, "Chunked", total).await;
    assert_eq!(response.status(), StatusCode::OK);
    let session = response.headers()["location"].to_str().unwrap().to_string();
    assert!(
        session.starts_with(&h.sim.base_url) && session.contains("upload_id="),
        "{session}"
    );

    let put = |range: String, len: usize| {
        client
            .put(&session)
            .header("Content-Type", "video/mp4")
            .header("Content-Range", range)
            .body(vec![1u8; len])
            .send()
    };
    // Nothing yet: the probe answers 308 without a Range.
    let response = put(format!("bytes */{total}"), 0).await.unwrap();
    assert_eq!(response.status().as_u16(), 308);
    assert!(response.headers().get("range").is_none());

    let response = put(format!("bytes 0-{}/{total}", CHUNK - 1), CHUNK)
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 308);
    assert_eq!(
        response.headers()["range"],
        format!("bytes=0-{}", CHUNK - 1).as_str()
    );
    let response = put(format!("bytes */{total}"), 0).await.unwrap();
    assert_eq!(response.status().as_u16(), 308);
    assert_eq!(
        response.headers()["range"],
        format!("bytes=0-{}", CHUNK - 1).as_str()
    );

    // A chunk that does not continue where the server is: refused.
    let response = put(format!("bytes 0-{}/{total}", CHUNK - 1), CHUNK)
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);

    let response = put(format!("bytes {CHUNK}-{}/{total}", 2 * CHUNK - 1), CHUNK)
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 308);
    let response = put(format!("bytes {}-{}/{total}", 2 * CHUNK, total - 1), 1000)
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let video: Value = response.json().await.unwrap();
    assert_eq!(video["kind"], "youtube#video");
    assert_eq!(video["snippet"]["title"], "Chunked");
    assert_eq!(video["status"]["uploadStatus"], "uploaded");
    assert_eq!(video["status"]["privacyStatus"], "private");
    let video_id = video["id"].as_str().unwrap().to_string();

    // The probe after completion answers the video.
    let response = put(format!("bytes */{total}"), 0).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let again: Value = response.json().await.unwrap();
    assert_eq!(again["id"], video_id.as_str());

    // videos.list: uploaded, then processed.
    let list = || {
        client
            .get(format!("{}/youtube/youtube/v3/videos", h.sim.base_url))
            .query(&[
                ("part", "status,processingDetails"),
                ("id", video_id.as_str()),
            ])
            .bearer_auth(&account.access_token)
            .send()
    };
    let body: Value = list().await.unwrap().json().await.unwrap();
    assert_eq!(body["items"][0]["status"]["uploadStatus"], "uploaded");
    assert_eq!(
        body["items"][0]["processingDetails"]["processingStatus"],
        "processing"
    );
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let body: Value = list().await.unwrap().json().await.unwrap();
    assert_eq!(body["items"][0]["status"]["uploadStatus"], "processed");
    assert_eq!(
        body["items"][0]["processingDetails"]["processingStatus"],
        "succeeded"
    );

    // An unknown session.
    let response = client
        .put(format!(
            "{}/youtube/upload/youtube/v3/videos?uploadType=resumable&upload_id=nope",
            h.sim.base_url
        ))
        .body(vec![0u8; 10])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(published(&h, "youtube", &account).len(), 1);
    // The chunk that did not continue where the upload stood.
    assert_eq!(h.take_violation_rules(), ["badRequest"]);
}

#[actix_web::test]
async fn youtube_sim_errors_and_quota() {
    let h = Harness::start().await;
    let client = reqwest::Client::new();

    // A bad token: Google's JSON error.
    let response = open_session(&client, &h, "ya29-nope", "t", 10).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], 401);
    assert_eq!(body["error"]["status"], "UNAUTHENTICATED");
    assert_eq!(body["error"]["errors"][0]["reason"], "authError");
    assert_eq!(body["error"]["errors"][0]["domain"], "global");

    let account = h.account("youtube", "Channel");
    // A title over 100 characters.
    let response = open_session(&client, &h, &account.access_token, &"x".repeat(101), 10).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["errors"][0]["reason"], "invalidTitle");

    // The whole body must match the declared length.
    let response = open_session(&client, &h, &account.access_token, "t", 10).await;
    let session = response.headers()["location"].to_str().unwrap().to_string();
    let response = client
        .put(&session)
        .body(vec![0u8; 9])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);

    // 10,000 units a day at 1600 per insert (two spent above plus the refused title): the 7th
    // insert is over.
    for _ in 0..4 {
        let response = open_session(&client, &h, &account.access_token, "t", 10).await;
        assert_eq!(response.status(), StatusCode::OK);
    }
    let response = open_session(&client, &h, &account.access_token, "t", 10).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["errors"][0]["reason"], "quotaExceeded");
    assert_eq!(body["error"]["errors"][0]["domain"], "youtube.quota");
    // Another channel has its own quota.
    let other = h.account("youtube", "Other");
    let response = open_session(&client, &h, &other.access_token, "t", 10).await;
    assert_eq!(response.status(), StatusCode::OK);
    // The body shorter than declared.
    assert_eq!(h.take_violation_rules(), ["badRequest"]);
}
