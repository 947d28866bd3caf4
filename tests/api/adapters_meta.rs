//! Meta adapters (facebook pages, instagram, threads) against the simulator's Graph and Threads
//! hosts: every post type with its content read back from the simulator, the fault classes,
//! recorded steps, and a few wire-level checks of the simulator itself.

use reqwest::StatusCode;
use serde_json::{Value, json};
use service_sim::state::{FaultKind, FaultSpec, Processing, PublishedItem, SimAccount};
use social_service::{
    domain::plan::{FacebookPost, InstagramPost, MediaKind, MediaRef, PublishPlan, ThreadsPost},
    platforms::{Pending, PlatformError},
};

use crate::adapters::Harness;
use crate::helpers::{fault, set_fault};

/// Whether an error is of the expected class.
type ErrorCheck = fn(&PlatformError) -> bool;

fn published(h: &Harness, account: &SimAccount) -> Vec<PublishedItem> {
    h.sim
        .state()
        .published(Some(&account.platform), Some(&account.external_id))
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

fn processing(mode: Processing) -> FaultSpec {
    FaultSpec {
        processing: mode,
        ..FaultSpec::default()
    }
}

/// A media reference to a URL the probe never saw (the adapter must cope with what the
/// platform says about it).
fn missing_image(h: &Harness) -> MediaRef {
    MediaRef {
        url: format!("{}/media/missing.jpg", h.sim.base_url),
        kind: MediaKind::Image,
        content_type: "image/jpeg".into(),
        size: Some(1000),
        dimensions: None,
    }
}

// ---------------------------------------------------------------------------------------------
// facebook

#[actix_web::test]
async fn facebook_text_post() {
    let h = Harness::start().await;
    let page = h.account("facebook", "Page");
    let plan = PublishPlan::Facebook(FacebookPost::Text {
        message: "hello page".into(),
    });
    let (result, steps) = h.publish(&page, &plan).await;
    let published_post = result.unwrap();
    assert!(
        published_post
            .post_id
            .starts_with(&format!("{}_", page.external_id))
    );
    assert_eq!(steps["final_started"], true);
    let items = published(&h, &page);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].id, published_post.post_id);
    assert_eq!(items[0].kind, "feed");
    assert_eq!(items[0].text.as_deref(), Some("hello page"));
}

#[actix_web::test]
async fn facebook_photo_post() {
    let h = Harness::start().await;
    let page = h.account("facebook", "Page");
    let image = h.media("sample.jpg").await;
    let plan = PublishPlan::Facebook(FacebookPost::Photo {
        image: image.clone(),
        caption: "a photo".into(),
    });
    let (result, steps) = h.publish(&page, &plan).await;
    let post = result.unwrap();
    assert_eq!(steps["final_started"], true);
    let items = published(&h, &page);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].id, post.post_id, "the post id, not the photo id");
    assert_eq!(items[0].kind, "photo");
    assert_eq!(items[0].text.as_deref(), Some("a photo"));
    assert_eq!(items[0].media, vec![image.url]);
}

#[actix_web::test]
async fn facebook_album_post() {
    let h = Harness::start().await;
    let page = h.account("facebook", "Page");
    let images = vec![
        h.media("sample.jpg").await,
        h.media("sample.png").await,
        h.media("sample.webp").await,
    ];
    let plan = PublishPlan::Facebook(FacebookPost::Album {
        images: images.clone(),
        message: "three photos".into(),
    });
    let (result, steps) = h.publish(&page, &plan).await;
    let post = result.unwrap();
    assert_eq!(steps["final_started"], true);
    let photo_ids = step_ids(&steps, "photo");
    assert_eq!(photo_ids.len(), 3);
    let items = published(&h, &page);
    assert_eq!(
        items.len(),
        1,
        "unpublished photos are not posts: {items:?}"
    );
    assert_eq!(items[0].id, post.post_id);
    assert_eq!(items[0].kind, "album");
    assert_eq!(items[0].text.as_deref(), Some("three photos"));
    assert_eq!(items[0].extra["photo_count"], 3);
    assert_eq!(items[0].extra["photo_ids"], json!(photo_ids));
    let urls: Vec<String> = images.into_iter().map(|m| m.url).collect();
    assert_eq!(items[0].media, urls);
}

#[actix_web::test]
async fn facebook_video_post() {
    let h = Harness::start().await;
    let page = h.account("facebook", "Page");
    let video = h.media("sample.mp4").await;
    let plan = PublishPlan::Facebook(FacebookPost::Video {
        video: video.clone(),
        description: "a video".into(),
    });
    let (result, steps) = h.publish(&page, &plan).await;
    let post = result.unwrap();
    assert_eq!(steps["final_started"], true);
    assert_eq!(step_ids(&steps, "video"), vec![post.post_id.clone()]);
    let items = published(&h, &page);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].id, post.post_id);
    assert_eq!(items[0].kind, "video");
    assert_eq!(items[0].text.as_deref(), Some("a video"));
    assert_eq!(items[0].media, vec![video.url]);
}

/// Videos are created on `graph_video_url`, everything else on `graph_url`: with the video host
/// unreachable a video fails and creates nothing, while a text post on the same config goes out.
#[actix_web::test]
async fn facebook_videos_are_created_on_the_video_host() {
    let mut h = Harness::start().await;
    // Port 1 on loopback: nothing listens there.
    h.config.graph_video_url = "http://127.0.0.1:1/graph".into();
    let page = h.account("facebook", "Page");
    let plan = PublishPlan::Facebook(FacebookPost::Video {
        video: h.media("sample.mp4").await,
        description: "a video".into(),
    });
    let (result, _) = h.publish(&page, &plan).await;
    assert!(result.is_err(), "{result:?}");
    assert_eq!(published(&h, &page).len(), 0);

    let text = PublishPlan::Facebook(FacebookPost::Text {
        message: "still on the graph host".into(),
    });
    let (result, _) = h.publish(&page, &text).await;
    result.unwrap();
    assert_eq!(published(&h, &page).len(), 1);

    // Pointed back at the simulator, the video goes out.
    h.config.graph_video_url = h.config.graph_url.clone();
    let (result, _) = h.publish(&page, &plan).await;
    result.unwrap();
    assert_eq!(published(&h, &page).len(), 2);
}

#[actix_web::test]
async fn facebook_video_processing_failure_and_still_processing() {
    let mut h = Harness::start().await;
    h.config.processing_timeout_secs = 1;
    let page = h.account("facebook", "Page");
    let plan = PublishPlan::Facebook(FacebookPost::Video {
        video: h.media("sample.mp4").await,
        description: "v".into(),
    });

    set_fault(&h.sim, &page, processing(Processing::Fail));
    let (result, _) = h.publish(&page, &plan).await;
    assert!(
        matches!(result, Err(PlatformError::ProcessingFailed(_))),
        "{result:?}"
    );

    // Still processing at our deadline: the video exists and may yet go out.
    set_fault(&h.sim, &page, processing(Processing::Never));
    let (result, steps) = h.publish(&page, &plan).await;
    let video_id = steps["steps"][0]["id"].as_str().unwrap().to_string();
    match result {
        Err(PlatformError::StillProcessing(pending)) => {
            assert_eq!(*pending, Pending::FacebookVideo { video_id })
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(steps["final_started"], true);
    assert_eq!(published(&h, &page).len(), 0);
}

#[actix_web::test]
async fn facebook_faults_are_classified() {
    let h = Harness::start().await;
    let page = h.account("facebook", "Page");
    let plan = PublishPlan::Facebook(FacebookPost::Text {
        message: "x".into(),
    });
    let cases: [(FaultKind, ErrorCheck); 5] = [
        (FaultKind::TokenExpired, |e| {
            matches!(e, PlatformError::TokenExpired(_))
        }),
        (FaultKind::TokenRevoked, |e| {
            matches!(e, PlatformError::TokenInvalid(_))
        }),
        (
            FaultKind::RateLimit,
            |e| matches!(e, PlatformError::RateLimited { retry_after, .. } if *retry_after > 0),
        ),
        (FaultKind::Permission, |e| {
            matches!(e, PlatformError::Permission(_))
        }),
        (FaultKind::ServerError, |e| {
            matches!(e, PlatformError::Transient(_))
        }),
    ];
    for (kind, expected) in cases {
        set_fault(&h.sim, &page, fault(kind));
        let (result, _) = h.publish(&page, &plan).await;
        let err = result.unwrap_err();
        assert!(expected(&err), "{kind:?} gave {err:?}");
    }
    assert_eq!(published(&h, &page).len(), 0);
}

#[actix_web::test]
async fn facebook_missing_photo_is_media_fetch() {
    let h = Harness::start().await;
    let page = h.account("facebook", "Page");
    let plan = PublishPlan::Facebook(FacebookPost::Photo {
        image: missing_image(&h),
        caption: "gone".into(),
    });
    let (result, _) = h.publish(&page, &plan).await;
    assert!(
        matches!(result, Err(PlatformError::MediaFetch(_))),
        "{result:?}"
    );
    let album = PublishPlan::Facebook(FacebookPost::Album {
        images: vec![h.media("sample.jpg").await, missing_image(&h)],
        message: "album".into(),
    });
    let (result, steps) = h.publish(&page, &album).await;
    assert!(
        matches!(result, Err(PlatformError::MediaFetch(_))),
        "{result:?}"
    );
    assert_eq!(steps["final_started"], false);
    assert_eq!(step_ids(&steps, "photo").len(), 1);
    assert_eq!(published(&h, &page).len(), 0);
}

// ---------------------------------------------------------------------------------------------
// instagram

#[actix_web::test]
async fn instagram_image_post() {
    let h = Harness::start().await;
    let ig = h.account("instagram", "Insta");
    let image = h.media("sample.jpg").await;
    let plan = PublishPlan::Instagram(InstagramPost::Image {
        image: image.clone(),
        caption: "an image #tag".into(),
    });
    let (result, steps) = h.publish(&ig, &plan).await;
    let post = result.unwrap();
    assert_eq!(steps["final_started"], true);
    assert_eq!(step_ids(&steps, "container").len(), 1);
    let items = published(&h, &ig);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].id, post.post_id);
    assert_eq!(items[0].kind, "image");
    assert_eq!(items[0].text.as_deref(), Some("an image #tag"));
    assert_eq!(items[0].media, vec![image.url]);
    assert_eq!(
        items[0].extra["container_id"],
        json!(step_ids(&steps, "container")[0])
    );
}

#[actix_web::test]
async fn instagram_carousel_post() {
    let h = Harness::start().await;
    let ig = h.account("instagram", "Insta");
    let items_in = vec![
        h.media("sample.jpg").await,
        h.media("sample.mp4").await,
        h.media("sample.jpg").await,
    ];
    let plan = PublishPlan::Instagram(InstagramPost::Carousel {
        items: items_in.clone(),
        caption: "carousel".into(),
    });
    let (result, steps) = h.publish(&ig, &plan).await;
    let post = result.unwrap();
    let children = step_ids(&steps, "child");
    assert_eq!(children.len(), 3);
    assert_eq!(step_ids(&steps, "container").len(), 1);
    let items = published(&h, &ig);
    assert_eq!(items.len(), 1, "carousel children are not posts");
    assert_eq!(items[0].id, post.post_id);
    assert_eq!(items[0].kind, "carousel");
    assert_eq!(items[0].text.as_deref(), Some("carousel"));
    assert_eq!(
        items[0].media,
        items_in.into_iter().map(|m| m.url).collect::<Vec<_>>()
    );
    assert_eq!(items[0].extra["children"], json!(children));
}

#[actix_web::test]
async fn instagram_reel_with_cover() {
    let h = Harness::start().await;
    let ig = h.account("instagram", "Insta");
    let video = h.media("sample.mp4").await;
    let cover = h.media("sample.jpg").await.url;
    let plan = PublishPlan::Instagram(InstagramPost::Reel {
        video: video.clone(),
        cover_url: Some(cover.clone()),
        caption: "reel".into(),
    });
    let (result, steps) = h.publish(&ig, &plan).await;
    let post = result.unwrap();
    assert_eq!(steps["final_started"], true);
    let items = published(&h, &ig);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].id, post.post_id);
    assert_eq!(items[0].kind, "reels");
    assert_eq!(items[0].text.as_deref(), Some("reel"));
    assert_eq!(items[0].media, vec![video.url]);
    assert_eq!(items[0].extra["cover_url"], json!(cover));
    assert_eq!(items[0].extra["share_to_feed"], true);
}

#[actix_web::test]
async fn instagram_faults_are_classified() {
    let h = Harness::start().await;
    let ig = h.account("instagram", "Insta");
    let plan = PublishPlan::Instagram(InstagramPost::Image {
        image: h.media("sample.jpg").await,
        caption: "x".into(),
    });
    set_fault(&h.sim, &ig, fault(FaultKind::TokenRevoked));
    assert!(matches!(
        h.publish(&ig, &plan).await.0,
        Err(PlatformError::TokenInvalid(_))
    ));
    set_fault(&h.sim, &ig, fault(FaultKind::TokenExpired));
    assert!(matches!(
        h.publish(&ig, &plan).await.0,
        Err(PlatformError::TokenExpired(_))
    ));
    set_fault(&h.sim, &ig, fault(FaultKind::ServerError));
    assert!(matches!(
        h.publish(&ig, &plan).await.0,
        Err(PlatformError::Transient(_))
    ));
    set_fault(&h.sim, &ig, fault(FaultKind::Permission));
    assert!(matches!(
        h.publish(&ig, &plan).await.0,
        Err(PlatformError::Permission(_))
    ));
    // Rate limited at the final call only: the container was made, the publish refused.
    set_fault(
        &h.sim,
        &ig,
        FaultSpec {
            error: Some(FaultKind::RateLimit),
            path_contains: Some("media_publish".into()),
            ..FaultSpec::default()
        },
    );
    let (result, steps) = h.publish(&ig, &plan).await;
    match result {
        Err(PlatformError::RateLimited { retry_after, .. }) => assert_eq!(retry_after, 300),
        other => panic!("{other:?}"),
    }
    assert_eq!(steps["final_started"], true);
    assert_eq!(step_ids(&steps, "container").len(), 1);
    assert_eq!(published(&h, &ig).len(), 0);
}

#[actix_web::test]
async fn instagram_processing_failures() {
    let mut h = Harness::start().await;
    h.config.processing_timeout_secs = 1;
    let ig = h.account("instagram", "Insta");
    let reel = PublishPlan::Instagram(InstagramPost::Reel {
        video: h.media("sample.mp4").await,
        cover_url: None,
        caption: "r".into(),
    });
    set_fault(&h.sim, &ig, processing(Processing::Fail));
    let (result, steps) = h.publish(&ig, &reel).await;
    assert!(
        matches!(result, Err(PlatformError::ProcessingFailed(_))),
        "{result:?}"
    );
    assert_eq!(steps["final_started"], false);

    // Not finished at our deadline: nothing is published yet, and the container may still be.
    set_fault(&h.sim, &ig, processing(Processing::Never));
    let (result, steps) = h.publish(&ig, &reel).await;
    let container_id = steps["steps"][0]["id"].as_str().unwrap().to_string();
    match result {
        Err(PlatformError::StillProcessing(pending)) => {
            assert_eq!(*pending, Pending::InstagramContainer { container_id })
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(steps["final_started"], false);
    // A carousel child that does not finish cannot be carried on: the carousel fails.
    let carousel = PublishPlan::Instagram(InstagramPost::Carousel {
        items: vec![h.media("sample.jpg").await, h.media("sample.jpg").await],
        caption: "c".into(),
    });
    match h.publish(&ig, &carousel).await.0 {
        Err(PlatformError::CarouselFailed(m)) => assert!(m.contains("did not finish"), "{m}"),
        other => panic!("{other:?}"),
    }

    // A child that fails processing fails the carousel.
    set_fault(&h.sim, &ig, processing(Processing::Fail));
    let carousel = PublishPlan::Instagram(InstagramPost::Carousel {
        items: vec![h.media("sample.jpg").await, h.media("sample.jpg").await],
        caption: "c".into(),
    });
    let (result, steps) = h.publish(&ig, &carousel).await;
    assert!(
        matches!(result, Err(PlatformError::CarouselFailed(_))),
        "{result:?}"
    );
    assert_eq!(step_ids(&steps, "child").len(), 2);
    assert_eq!(published(&h, &ig).len(), 0);
}

#[actix_web::test]
async fn instagram_media_fetch_failures() {
    let h = Harness::start().await;
    let ig = h.account("instagram", "Insta");
    let plan = PublishPlan::Instagram(InstagramPost::Image {
        image: missing_image(&h),
        caption: "x".into(),
    });
    let (result, _) = h.publish(&ig, &plan).await;
    assert!(
        matches!(result, Err(PlatformError::MediaFetch(_))),
        "{result:?}"
    );
    // A reel's video is downloaded during processing: the container ends in ERROR (2207052).
    let reel = PublishPlan::Instagram(InstagramPost::Reel {
        video: MediaRef {
            url: format!("{}/media/missing.mp4", h.sim.base_url),
            kind: MediaKind::Video,
            content_type: "video/mp4".into(),
            size: None,
            dimensions: None,
        },
        cover_url: None,
        caption: "x".into(),
    });
    let (result, _) = h.publish(&ig, &reel).await;
    assert!(
        matches!(result, Err(PlatformError::MediaFetch(_))),
        "{result:?}"
    );
    // A missing carousel child makes a carousel failure.
    let carousel = PublishPlan::Instagram(InstagramPost::Carousel {
        items: vec![h.media("sample.jpg").await, missing_image(&h)],
        caption: "c".into(),
    });
    let (result, _) = h.publish(&ig, &carousel).await;
    assert!(
        matches!(result, Err(PlatformError::CarouselFailed(_))),
        "{result:?}"
    );
    assert_eq!(published(&h, &ig).len(), 0);
}

// ---------------------------------------------------------------------------------------------
// threads

#[actix_web::test]
async fn threads_text_post() {
    let h = Harness::start().await;
    let th = h.account("threads", "Threader");
    let plan = PublishPlan::Threads(ThreadsPost::Text {
        text: "just text".into(),
    });
    let (result, steps) = h.publish(&th, &plan).await;
    let post = result.unwrap();
    assert_eq!(steps["final_started"], true);
    assert_eq!(step_ids(&steps, "post"), vec![post.post_id.clone()]);
    let items = published(&h, &th);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].id, post.post_id);
    assert_eq!(items[0].kind, "text");
    assert_eq!(items[0].text.as_deref(), Some("just text"));
    assert!(items[0].media.is_empty());
    assert_eq!(items[0].reply_to, None);
    // One call: the container is created and published at once (`auto_publish_text`), so no
    // container to wait on and two calls fewer against the app's call budget.
    assert_eq!(h.sim.state().request_count("threads", &th.external_id), 1);
    assert!(step_ids(&steps, "container").is_empty());
}

/// `auto_publish_text` publishes within the same 24-hour quota as `threads_publish`: a text
/// post over it is refused, and nothing is published.
#[actix_web::test]
async fn threads_text_post_at_the_quota_is_refused() {
    let h = Harness::start().await;
    let th = h.account("threads", "Threader");
    let plan = PublishPlan::Threads(ThreadsPost::Text {
        text: "one too many".into(),
    });
    for i in 0..250 {
        let text = PublishPlan::Threads(ThreadsPost::Text {
            text: format!("post {i}"),
        });
        h.publish(&th, &text).await.0.unwrap();
    }
    let (result, steps) = h.publish(&th, &plan).await;
    assert!(
        matches!(result, Err(PlatformError::RateLimited { .. })),
        "{result:?}"
    );
    assert!(step_ids(&steps, "post").is_empty());
    assert_eq!(published(&h, &th).len(), 250);
}

#[actix_web::test]
async fn threads_image_and_video_posts() {
    let h = Harness::start().await;
    let th = h.account("threads", "Threader");
    let image = h.media("sample.jpg").await;
    let video = h.media("sample.mp4").await;
    let (r1, _) = h
        .publish(
            &th,
            &PublishPlan::Threads(ThreadsPost::Image {
                image: image.clone(),
                text: Some("pic".into()),
            }),
        )
        .await;
    let (r2, steps) = h
        .publish(
            &th,
            &PublishPlan::Threads(ThreadsPost::Video {
                video: video.clone(),
                text: None,
            }),
        )
        .await;
    let (p1, p2) = (r1.unwrap(), r2.unwrap());
    assert_eq!(step_ids(&steps, "container").len(), 1);
    let items = published(&h, &th);
    assert_eq!(items.len(), 2);
    assert_eq!(
        (items[0].id.as_str(), items[0].kind.as_str()),
        (p1.post_id.as_str(), "image")
    );
    assert_eq!(items[0].text.as_deref(), Some("pic"));
    assert_eq!(items[0].media, vec![image.url]);
    assert_eq!(
        (items[1].id.as_str(), items[1].kind.as_str()),
        (p2.post_id.as_str(), "video")
    );
    assert_eq!(items[1].text, None);
    assert_eq!(items[1].media, vec![video.url]);
}

#[actix_web::test]
async fn threads_carousel_post() {
    let h = Harness::start().await;
    let th = h.account("threads", "Threader");
    let media = vec![h.media("sample.jpg").await, h.media("sample.mp4").await];
    let plan = PublishPlan::Threads(ThreadsPost::Carousel {
        items: media.clone(),
        text: Some("two".into()),
    });
    let (result, steps) = h.publish(&th, &plan).await;
    let post = result.unwrap();
    assert_eq!(step_ids(&steps, "child").len(), 2);
    let items = published(&h, &th);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].id, post.post_id);
    assert_eq!(items[0].kind, "carousel");
    assert_eq!(items[0].text.as_deref(), Some("two"));
    assert_eq!(
        items[0].media,
        media.into_iter().map(|m| m.url).collect::<Vec<_>>()
    );
}

#[actix_web::test]
async fn threads_thread_of_three_chains_replies() {
    let h = Harness::start().await;
    let th = h.account("threads", "Threader");
    let image = h.media("sample.jpg").await;
    let plan = PublishPlan::Threads(ThreadsPost::Thread {
        texts: vec!["one".into(), "two".into(), "three".into()],
        media: Some(image.clone()),
    });
    let (result, steps) = h.publish(&th, &plan).await;
    let post = result.unwrap();
    assert_eq!(post.post_ids.len(), 3);
    assert_eq!(post.post_id, post.post_ids[0]);
    assert_eq!(step_ids(&steps, "post"), post.post_ids);
    // A container for the first post (its image); the text-only replies in one call each.
    assert_eq!(step_ids(&steps, "container").len(), 1);
    assert_eq!(h.sim.state().request_count("threads", &th.external_id), 5);
    assert_eq!(steps["final_started"], true);
    let items = published(&h, &th);
    assert_eq!(items.len(), 3);
    let ids: Vec<&str> = items.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(
        ids,
        post.post_ids.iter().map(String::as_str).collect::<Vec<_>>()
    );
    assert_eq!(items[0].kind, "image");
    assert_eq!(items[0].media, vec![image.url]);
    assert_eq!(items[0].reply_to, None);
    assert_eq!(items[1].kind, "text");
    assert!(items[1].media.is_empty());
    assert_eq!(items[1].reply_to.as_deref(), Some(ids[0]));
    assert_eq!(items[2].reply_to.as_deref(), Some(ids[1]));
    let texts: Vec<_> = items.iter().map(|i| i.text.clone().unwrap()).collect();
    assert_eq!(texts, ["one", "two", "three"]);
}

#[actix_web::test]
async fn threads_faults_are_classified() {
    let mut h = Harness::start().await;
    h.config.processing_timeout_secs = 1;
    let th = h.account("threads", "Threader");
    let text = PublishPlan::Threads(ThreadsPost::Text { text: "t".into() });

    set_fault(&h.sim, &th, fault(FaultKind::RateLimit));
    match h.publish(&th, &text).await.0 {
        Err(PlatformError::RateLimited { retry_after, .. }) => assert!(retry_after > 0),
        other => panic!("{other:?}"),
    }
    set_fault(&h.sim, &th, fault(FaultKind::TokenExpired));
    assert!(matches!(
        h.publish(&th, &text).await.0,
        Err(PlatformError::TokenExpired(_))
    ));
    set_fault(&h.sim, &th, fault(FaultKind::Permission));
    assert!(matches!(
        h.publish(&th, &text).await.0,
        Err(PlatformError::Permission(_))
    ));

    set_fault(&h.sim, &th, processing(Processing::Never));
    let video = PublishPlan::Threads(ThreadsPost::Video {
        video: h.media("sample.mp4").await,
        text: None,
    });
    assert!(matches!(
        h.publish(&th, &video).await.0,
        Err(PlatformError::StillProcessing(p)) if matches!(*p, Pending::ThreadsContainer { .. })
    ));
    // The posts of a thread cannot be carried on one by one: a stuck one fails the thread.
    let thread = PublishPlan::Threads(ThreadsPost::Thread {
        texts: vec!["one".into(), "two".into()],
        media: Some(h.media("sample.mp4").await),
    });
    match h.publish(&th, &thread).await.0 {
        Err(PlatformError::ProcessingFailed(m)) => assert!(m.contains("did not finish"), "{m}"),
        other => panic!("{other:?}"),
    }
    // A text post has nothing to process: created and published in one call, it goes out.
    assert!(h.publish(&th, &text).await.0.is_ok());
    assert_eq!(published(&h, &th).len(), 1);
    set_fault(&h.sim, &th, processing(Processing::Fail));
    let carousel = PublishPlan::Threads(ThreadsPost::Carousel {
        items: vec![h.media("sample.jpg").await, h.media("sample.mp4").await],
        text: None,
    });
    assert!(matches!(
        h.publish(&th, &carousel).await.0,
        Err(PlatformError::CarouselFailed(_))
    ));

    h.sim
        .state()
        .clear_faults(Some(("threads", &th.external_id)));
    let image = PublishPlan::Threads(ThreadsPost::Image {
        image: missing_image(&h),
        text: None,
    });
    assert!(matches!(
        h.publish(&th, &image).await.0,
        Err(PlatformError::MediaFetch(_))
    ));
    assert_eq!(published(&h, &th).len(), 1);
}

#[actix_web::test]
async fn threads_publish_call_is_never_retried() {
    let h = Harness::start().await;
    let th = h.account("threads", "Threader");
    // The first publish call fails once with a 500.
    set_fault(
        &h.sim,
        &th,
        FaultSpec {
            error: Some(FaultKind::ServerError),
            path_contains: Some("threads_publish".into()),
            times: Some(1),
            ..FaultSpec::default()
        },
    );
    let plan = PublishPlan::Threads(ThreadsPost::Thread {
        texts: vec!["a".into(), "b".into()],
        media: Some(h.media("sample.jpg").await),
    });
    let (result, steps) = h.publish(&th, &plan).await;
    assert!(
        matches!(result, Err(PlatformError::Transient(_))),
        "{result:?}"
    );
    assert_eq!(steps["final_started"], true);
    assert!(step_ids(&steps, "post").is_empty());
    // Container, one status poll, one publish: no second publish attempt.
    assert_eq!(h.sim.state().request_count("threads", &th.external_id), 3);
    assert_eq!(published(&h, &th).len(), 0);

    // A text post's one call is its final call: never retried either.
    let other = h.account("threads", "Texter");
    set_fault(
        &h.sim,
        &other,
        FaultSpec {
            error: Some(FaultKind::ServerError),
            times: Some(1),
            ..FaultSpec::default()
        },
    );
    let text = PublishPlan::Threads(ThreadsPost::Text { text: "a".into() });
    let (result, steps) = h.publish(&other, &text).await;
    assert!(
        matches!(result, Err(PlatformError::Transient(_))),
        "{result:?}"
    );
    assert_eq!(steps["final_started"], true);
    assert_eq!(
        h.sim.state().request_count("threads", &other.external_id),
        1
    );
    assert_eq!(published(&h, &other).len(), 0);
}

// ---------------------------------------------------------------------------------------------
// simulator wire checks

struct Wire {
    http: reqwest::Client,
    base: String,
}

impl Wire {
    fn new(h: &Harness) -> Self {
        Self {
            http: reqwest::Client::new(),
            base: h.sim.base_url.clone(),
        }
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> (StatusCode, Value) {
        let response = request.send().await.unwrap();
        let status = response.status();
        (status, response.json().await.unwrap())
    }

    fn graph(&self, path: &str) -> String {
        format!("{}/graph/v24.0/{path}", self.base)
    }
}

#[actix_web::test]
async fn sim_graph_accepts_query_form_and_json() {
    let h = Harness::start().await;
    let w = Wire::new(&h);
    let page = h.account("facebook", "Page");
    let image = format!("{}/media/sample.jpg", h.sim.base_url);
    // Query string, token as a parameter.
    let (status, photo) = w
        .send(
            w.http
                .post(w.graph(&format!("{}/photos", page.external_id)))
                .query(&[
                    ("url", image.as_str()),
                    ("published", "false"),
                    ("access_token", &page.access_token),
                ]),
        )
        .await;
    assert_eq!(status, 200, "{photo}");
    assert!(photo.get("post_id").is_none(), "unpublished: {photo}");
    // Form body with the token in the body.
    let (status, photo2) = w
        .send(
            w.http
                .post(w.graph(&format!("{}/photos", page.external_id)))
                .form(&[
                    ("url", image.as_str()),
                    ("published", "false"),
                    ("access_token", &page.access_token),
                ]),
        )
        .await;
    assert_eq!(status, 200, "{photo2}");
    // JSON body with attached_media as an array, token as OAuth header.
    let (status, post) = w
        .send(
            w.http
                .post(w.graph(&format!("{}/feed", page.external_id)))
                .header("Authorization", format!("OAuth {}", page.access_token))
                .json(&json!({
                    "message": "json album",
                    "attached_media": [{"media_fbid": photo["id"]}, {"media_fbid": photo2["id"]}],
                })),
        )
        .await;
    assert_eq!(status, 200, "{post}");
    let item = h
        .sim
        .state()
        .published_item(post["id"].as_str().unwrap())
        .unwrap();
    assert_eq!(item.kind, "album");
    assert_eq!(item.extra["photo_count"], 2);
    // An attached photo cannot be attached again.
    let (status, err) = w
        .send(
            w.http
                .post(w.graph(&format!("{}/feed", page.external_id)))
                .bearer_auth(&page.access_token)
                .form(&[
                    ("message", "again"),
                    (
                        "attached_media[0]",
                        &json!({"media_fbid": photo["id"]}).to_string(),
                    ),
                ]),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(err["error"]["code"], 100);
}

#[actix_web::test]
async fn sim_graph_errors_follow_meta() {
    let h = Harness::start().await;
    let w = Wire::new(&h);
    let page = h.account("facebook", "Page");
    let ig = h.account("instagram", "Insta");
    // No token / unknown token.
    let (status, body) = w.send(w.http.get(w.graph(&page.external_id))).await;
    assert_eq!(status, 401);
    assert_eq!(body["error"]["code"], 190);
    assert!(body["error"]["fbtrace_id"].is_string());
    let (_, body) = w
        .send(
            w.http
                .get(w.graph(&page.external_id))
                .bearer_auth("EAAB-nope"),
        )
        .await;
    assert_eq!(body["error"]["code"], 190);
    // Another account's node is unsupported.
    let (status, body) = w
        .send(
            w.http
                .post(w.graph(&format!("{}/media", ig.external_id)))
                .bearer_auth(&page.access_token)
                .form(&[("image_url", "x")]),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], 100);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Unsupported post request")
    );
    // Rate limit: code 32 with the BUC header at 100%.
    set_fault(&h.sim, &page, fault(FaultKind::RateLimit));
    let response = w
        .http
        .get(w.graph(&page.external_id))
        .bearer_auth(&page.access_token)
        .send()
        .await
        .unwrap();
    let usage: Value = serde_json::from_str(
        response
            .headers()
            .get("x-business-use-case-usage")
            .unwrap()
            .to_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(usage[&page.external_id][0]["call_count"], 100);
    assert_eq!(
        usage[&page.external_id][0]["estimated_time_to_regain_access"],
        5
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], 32);
    // Expired token: 190/463.
    set_fault(&h.sim, &ig, fault(FaultKind::TokenExpired));
    let (_, body) = w
        .send(
            w.http
                .get(w.graph(&ig.external_id))
                .bearer_auth(&ig.access_token),
        )
        .await;
    assert_eq!(
        (
            body["error"]["code"].as_i64(),
            body["error"]["error_subcode"].as_i64()
        ),
        (Some(190), Some(463))
    );
    // Server error: 500, transient.
    set_fault(&h.sim, &ig, fault(FaultKind::ServerError));
    let (status, body) = w
        .send(
            w.http
                .get(w.graph(&ig.external_id))
                .bearer_auth(&ig.access_token),
        )
        .await;
    assert_eq!(status, 500);
    assert_eq!(body["error"]["is_transient"], true);
    // The call without a token is the one protocol violation here.
    assert_eq!(h.take_violation_rules(), ["missing_token"]);
}

#[actix_web::test]
async fn sim_instagram_container_rules() {
    let h = Harness::start().await;
    let w = Wire::new(&h);
    let ig = h.account("instagram", "Insta");
    let media = |path: &str| w.graph(&format!("{}/{path}", ig.external_id));
    let video = format!("{}/media/sample.mp4", h.sim.base_url);
    let image = format!("{}/media/sample.jpg", h.sim.base_url);

    // A reel that never finishes processing cannot be published: 9007/2207027.
    set_fault(&h.sim, &ig, processing(Processing::Never));
    let (_, reel) = w
        .send(
            w.http
                .post(media("media"))
                .bearer_auth(&ig.access_token)
                .form(&[("media_type", "REELS"), ("video_url", video.as_str())]),
        )
        .await;
    let reel_id = reel["id"].as_str().unwrap().to_string();
    let (_, status) = w
        .send(
            w.http
                .get(w.graph(&reel_id))
                .bearer_auth(&ig.access_token)
                .query(&[("fields", "status_code,status")]),
        )
        .await;
    assert_eq!(status["status_code"], "IN_PROGRESS");
    let (code, err) = w
        .send(
            w.http
                .post(media("media_publish"))
                .bearer_auth(&ig.access_token)
                .query(&[("creation_id", reel_id.as_str())]),
        )
        .await;
    assert_eq!(code, 400);
    assert_eq!(err["error"]["code"], 9007);
    assert_eq!(err["error"]["error_subcode"], 2_207_027);
    h.sim.state().clear_faults(None);

    // Carousel rules: 2..10 children, existing and owned.
    let (_, child) = w
        .send(
            w.http
                .post(media("media"))
                .bearer_auth(&ig.access_token)
                .json(&json!({
                    "image_url": image, "is_carousel_item": true,
                })),
        )
        .await;
    let child = child["id"].as_str().unwrap().to_string();
    let (_, err) = w
        .send(
            w.http
                .post(media("media"))
                .bearer_auth(&ig.access_token)
                .form(&[("media_type", "CAROUSEL"), ("children", child.as_str())]),
        )
        .await;
    assert_eq!(err["error"]["code"], 100, "{err}");
    let bogus = format!("{child},12345");
    let (_, err) = w
        .send(
            w.http
                .post(media("media"))
                .bearer_auth(&ig.access_token)
                .form(&[("media_type", "CAROUSEL"), ("children", bogus.as_str())]),
        )
        .await;
    assert_eq!(err["error"]["code"], 100, "{err}");
    // A carousel item cannot be published on its own.
    let (_, err) = w
        .send(
            w.http
                .post(media("media_publish"))
                .bearer_auth(&ig.access_token)
                .query(&[("creation_id", child.as_str())]),
        )
        .await;
    assert_eq!(err["error"]["code"], 100);

    // An image container is FINISHED at once, publishes once, then is PUBLISHED.
    let (_, container) = w
        .send(
            w.http
                .post(media("media"))
                .bearer_auth(&ig.access_token)
                .form(&[("image_url", image.as_str()), ("caption", "c")]),
        )
        .await;
    let container = container["id"].as_str().unwrap().to_string();
    let publish = || {
        w.http
            .post(media("media_publish"))
            .bearer_auth(&ig.access_token)
            .form(&[("creation_id", container.as_str())])
    };
    let (code, first) = w.send(publish()).await;
    assert_eq!(code, 200, "{first}");
    let (code, _) = w.send(publish()).await;
    assert_eq!(code, 400, "a container publishes once");
    let (_, status) = w
        .send(
            w.http
                .get(w.graph(&container))
                .bearer_auth(&ig.access_token)
                .query(&[("fields", "status_code")]),
        )
        .await;
    assert_eq!(status["status_code"], "PUBLISHED");
    let (_, limit) = w
        .send(
            w.http
                .get(media("content_publishing_limit"))
                .bearer_auth(&ig.access_token),
        )
        .await;
    assert_eq!(limit["data"][0]["quota_usage"], 1);
    assert_eq!(limit["data"][0]["config"]["quota_total"], 100);
    assert_eq!(limit["data"][0]["config"]["quota_duration"], 86400);
    // An unknown field on a container is Meta's nonexisting-field error.
    let (_, err) = w
        .send(
            w.http
                .get(w.graph(&container))
                .bearer_auth(&ig.access_token)
                .query(&[("fields", "bogus")]),
        )
        .await;
    assert_eq!(err["error"]["code"], 100);
    // The one-child carousel, the item published alone and the unknown field.
    assert_eq!(
        h.take_violation_rules(),
        ["invalid_parameter", "invalid_parameter", "unknown_field"]
    );
}

#[actix_web::test]
async fn sim_facebook_video_state_machine() {
    let h = Harness::start().await;
    let w = Wire::new(&h);
    let page = h.account("facebook", "Page");
    let (_, video) = w
        .send(
            w.http
                .post(w.graph(&format!("{}/videos", page.external_id)))
                .bearer_auth(&page.access_token)
                .form(&[
                    ("file_url", format!("{}/media/sample.mp4", h.sim.base_url)),
                    ("description", "d".to_string()),
                ]),
        )
        .await;
    let id = video["id"].as_str().unwrap().to_string();
    let status = || {
        w.http
            .get(w.graph(&id))
            .bearer_auth(&page.access_token)
            .query(&[("fields", "status")])
    };
    let (_, first) = w.send(status()).await;
    assert_eq!(first["status"]["video_status"], "processing");
    assert_eq!(published(&h, &page).len(), 0);
    // Published when processing ends, even without a poll (watched in the simulator's state,
    // not through its API).
    let started = std::time::Instant::now();
    while published(&h, &page).is_empty() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "never published"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(published(&h, &page).len(), 1);
    let (_, done) = w.send(status()).await;
    assert_eq!(done["status"]["video_status"], "ready");
    assert_eq!(done["status"]["publishing_phase"]["status"], "complete");
    // A video URL that cannot be fetched is refused with code 389.
    let (_, err) = w
        .send(
            w.http
                .post(w.graph(&format!("{}/videos", page.external_id)))
                .bearer_auth(&page.access_token)
                .form(&[("file_url", format!("{}/media/missing.mp4", h.sim.base_url))]),
        )
        .await;
    assert_eq!(err["error"]["code"], 389);
}

#[actix_web::test]
async fn sim_threads_rules() {
    let h = Harness::start().await;
    let w = Wire::new(&h);
    let th = h.account("threads", "Threader");
    let threads = |path: &str| format!("{}/threads/v1.0/{path}", w.base);
    // Text over 500 characters is refused.
    let long = "x".repeat(501);
    let (code, err) = w
        .send(
            w.http
                .post(threads("me/threads"))
                .bearer_auth(&th.access_token)
                .form(&[("media_type", "TEXT"), ("text", long.as_str())]),
        )
        .await;
    assert_eq!(code, 400);
    assert_eq!(err["error"]["code"], 100);
    assert!(err["error"]["message"].as_str().unwrap().contains("500"));
    // reply_to_id must be a published thread.
    let (_, err) = w
        .send(
            w.http
                .post(threads("me/threads"))
                .bearer_auth(&th.access_token)
                .form(&[
                    ("media_type", "TEXT"),
                    ("text", "r"),
                    ("reply_to_id", "999"),
                ]),
        )
        .await;
    assert_eq!(err["error"]["code"], 100);
    // Container → status (unversioned path, as the Postman collection calls it) → publish.
    let (_, container) = w
        .send(
            w.http
                .post(threads(&format!("{}/threads", th.external_id)))
                .query(&[
                    ("media_type", "TEXT"),
                    ("text", "hi"),
                    ("access_token", th.access_token.as_str()),
                ]),
        )
        .await;
    let container = container["id"].as_str().unwrap().to_string();
    let (_, status) = w
        .send(
            w.http
                .get(format!("{}/threads/{container}/", w.base))
                .bearer_auth(&th.access_token)
                .query(&[("fields", "id,status,error_message")]),
        )
        .await;
    assert_eq!(status, json!({"id": container, "status": "FINISHED"}));
    let (code, post) = w
        .send(
            w.http
                .post(threads("me/threads_publish"))
                .bearer_auth(&th.access_token)
                .json(&json!({"creation_id": container})),
        )
        .await;
    assert_eq!(code, 200, "{post}");
    let (code, _) = w
        .send(
            w.http
                .post(threads("me/threads_publish"))
                .bearer_auth(&th.access_token)
                .json(&json!({"creation_id": container})),
        )
        .await;
    assert_eq!(code, 400, "published once");
    let (_, limit) = w
        .send(
            w.http
                .get(threads("me/threads_publishing_limit"))
                .bearer_auth(&th.access_token),
        )
        .await;
    assert_eq!(limit["data"][0]["quota_usage"], 1);
    assert_eq!(limit["data"][0]["config"]["quota_total"], 250);
    assert_eq!(limit["data"][0]["reply_config"]["quota_total"], 1000);
    // A video whose URL is gone ends in ERROR with FAILED_DOWNLOADING_VIDEO.
    let (_, video) = w
        .send(
            w.http
                .post(threads("me/threads"))
                .bearer_auth(&th.access_token)
                .form(&[
                    ("media_type", "VIDEO"),
                    ("video_url", &format!("{}/media/missing.mp4", w.base)),
                ]),
        )
        .await;
    let (_, status) = w
        .send(
            w.http
                .get(threads(video["id"].as_str().unwrap()))
                .bearer_auth(&th.access_token)
                .query(&[("fields", "id,status,error_message")]),
        )
        .await;
    assert_eq!(status["status"], "ERROR");
    assert_eq!(status["error_message"], "FAILED_DOWNLOADING_VIDEO");
    // A facebook token is not a threads token.
    let page = h.account("facebook", "Page");
    let (code, err) = w
        .send(w.http.get(threads("me")).bearer_auth(&page.access_token))
        .await;
    assert_eq!(code, 401);
    assert_eq!(err["error"]["code"], 190);
}

#[actix_web::test]
async fn instagram_publishing_quota() {
    let h = Harness::start().await;
    let w = Wire::new(&h);
    let ig = h.account("instagram", "Insta");
    // 100 posts in the last 24 h use up the quota.
    for i in 0..100 {
        h.sim.state().record_published(PublishedItem {
            platform: "instagram".into(),
            account_id: ig.external_id.clone(),
            id: format!("old-{i}"),
            kind: "image".into(),
            text: None,
            media: Vec::new(),
            reply_to: None,
            extra: Value::Null,
            published_at: chrono::Utc::now(),
        });
    }
    let plan = PublishPlan::Instagram(InstagramPost::Image {
        image: h.media("sample.jpg").await,
        caption: "one too many".into(),
    });
    let (result, steps) = h.publish(&ig, &plan).await;
    assert!(
        matches!(result, Err(PlatformError::RateLimited { retry_after, .. }) if retry_after > 0),
        "{result:?}"
    );
    assert_eq!(
        steps["final_started"], false,
        "failed before the final call"
    );
    // The platform itself refuses with code 9 / subcode 2207042.
    let container = step_ids(&steps, "container")[0].clone();
    let (code, err) = w
        .send(
            w.http
                .post(w.graph(&format!("{}/media_publish", ig.external_id)))
                .bearer_auth(&ig.access_token)
                .form(&[("creation_id", container.as_str())]),
        )
        .await;
    assert_eq!(code, 400);
    assert_eq!(
        (
            err["error"]["code"].as_i64(),
            err["error"]["error_subcode"].as_i64()
        ),
        (Some(9), Some(2_207_042))
    );
    assert_eq!(published(&h, &ig).len(), 100);
}

/// The simulator logs a request refused for breaking the protocol, with its method and path,
/// serves the log on `/_sim/violations` and clears it there; an unknown token, an unknown
/// object and an injected fault are answers, not violations.
#[actix_web::test]
async fn sim_logs_protocol_violations_but_not_answers_or_faults() {
    let h = Harness::start().await;
    let w = Wire::new(&h);
    let ig = h.account("instagram", "Insta");
    let violations = format!("{}/_sim/violations", h.sim.base_url);
    // Answers: an unknown token, an unknown object, an injected fault.
    let (status, _) = w
        .send(
            w.http
                .get(w.graph(&ig.external_id))
                .bearer_auth("IGAA-nope"),
        )
        .await;
    assert_eq!(status, 401);
    let (status, _) = w
        .send(w.http.get(w.graph("12345")).bearer_auth(&ig.access_token))
        .await;
    assert_eq!(status, 400);
    h.sim.state().set_faults(
        "instagram",
        &ig.external_id,
        FaultSpec {
            error: Some(FaultKind::ServerError),
            times: Some(1),
            ..FaultSpec::default()
        },
    );
    let (status, _) = w
        .send(
            w.http
                .get(w.graph(&ig.external_id))
                .bearer_auth(&ig.access_token),
        )
        .await;
    assert_eq!(status, 500);
    let (status, log) = w.send(w.http.get(&violations)).await;
    assert_eq!(status, 200);
    assert_eq!(log, json!({"count": 0, "violations": []}));

    // A violation: a field the node does not have.
    let (status, _) = w
        .send(
            w.http
                .get(w.graph(&ig.external_id))
                .bearer_auth(&ig.access_token)
                .query(&[("fields", "id,bogus")]),
        )
        .await;
    assert_eq!(status, 400);
    let (_, log) = w.send(w.http.get(&violations)).await;
    assert_eq!(log["count"], 1, "{log}");
    let logged = &log["violations"][0];
    assert_eq!(logged["platform"], "instagram", "{logged}");
    assert_eq!(logged["method"], "GET", "{logged}");
    assert_eq!(
        logged["path"],
        format!("/graph/v24.0/{}", ig.external_id),
        "{logged}"
    );
    assert_eq!(logged["rule"], "unknown_field", "{logged}");
    assert!(
        logged["detail"].as_str().unwrap().contains("bogus"),
        "{logged}"
    );
    let response = w.http.delete(&violations).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let (_, log) = w.send(w.http.get(&violations)).await;
    assert_eq!(log["count"], 0, "{log}");
}
