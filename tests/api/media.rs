//! The media probe and SSRF guard against the simulator's media host.

use social_service::media::{Accept, MediaError, MediaFetcher, MediaKind};

use crate::adapters::Harness;

const ANY: Accept = Accept {
    images: true,
    videos: true,
    webp: true,
    png: true,
};

#[actix_web::test]
async fn probe_accepts_the_sample_files_with_their_types() {
    let h = Harness::start().await;
    for (name, kind, content_type) in [
        ("sample.jpg", MediaKind::Image, "image/jpeg"),
        ("sample.png", MediaKind::Image, "image/png"),
        ("sample.webp", MediaKind::Image, "image/webp"),
        ("sample.mp4", MediaKind::Video, "video/mp4"),
        ("sample.mov", MediaKind::Video, "video/quicktime"),
    ] {
        let media = h.media(name).await;
        assert_eq!(media.kind, kind, "{name}");
        assert_eq!(media.content_type, content_type, "{name}");
        assert!(media.size.unwrap() > 0);
        // An image's size is read from its header; a video's is not.
        let expected = (kind == MediaKind::Image).then_some((1080, 1080));
        assert_eq!(media.dimensions, expected, "{name}");
    }
    let tall = h
        .media
        .probe(
            &format!("{}/media/image/1080x1920.png", h.sim.base_url),
            ANY,
        )
        .await
        .unwrap();
    assert_eq!(tall.dimensions, Some((1080, 1920)));
}

#[actix_web::test]
async fn instagram_images_outside_its_aspect_ratios_are_refused_before_any_call() {
    let app = crate::helpers::TestApp::spawn().await;
    let publisher = app.publisher("instagram", "pro").await;
    let image = |size: &str| app.media_url(&format!("image/{size}.png"));
    for (media, status) in [
        (vec![image("1080x1920")], 400),
        (vec![app.media_url("sample.jpg"), image("2000x1000")], 400),
        (vec![image("1080x1350")], 200),
    ] {
        let body = publisher.body(serde_json::json!({"text": "shape", "mediaUrls": media}));
        let (got, answer) = app.post(&publisher.key, &body).await;
        assert_eq!(got, status, "{media:?}: {answer}");
        if status == 400 {
            assert_eq!(answer["error"], "InvalidMediaType", "{answer}");
            assert!(
                answer["message"].as_str().unwrap().contains("aspect ratio"),
                "{answer}"
            );
        }
    }
    assert_eq!(app.published(&publisher.sim).len(), 1);
    crate::helpers::assert_no_violations(&app.sim);
}

#[actix_web::test]
async fn probe_refuses_large_wrong_type_and_missing_files() {
    let h = Harness::start().await;
    let url = |name: &str| format!("{}/media/{name}", h.sim.base_url);
    assert!(matches!(
        h.media.probe(&url("large.mp4"), ANY).await,
        Err(MediaError::TooLarge(m)) if m.contains("100MB")
    ));
    assert!(matches!(
        h.media.probe(&url("wrong-type.jpg"), ANY).await,
        Err(MediaError::InvalidType(m)) if m.contains("text/html")
    ));
    assert!(matches!(
        h.media.probe(&url("missing.jpg"), ANY).await,
        Err(MediaError::DownloadFailed(m)) if m.contains("404")
    ));
    let images_only = Accept {
        images: true,
        videos: false,
        webp: false,
        png: true,
    };
    assert!(matches!(
        h.media.probe(&url("sample.webp"), images_only).await,
        Err(MediaError::InvalidType(_))
    ));
}

#[actix_web::test]
async fn private_and_loopback_addresses_are_refused_without_an_allow_list_entry() {
    let h = Harness::start().await;
    // A fetcher that allow-lists nothing: the simulator itself is on loopback.
    let strict = MediaFetcher::new(&[], 100 * 1024 * 1024).unwrap();
    let port = h.sim.port;
    for url in [
        format!("http://127.0.0.1:{port}/media/sample.jpg"),
        "http://10.0.0.1/a.jpg".to_string(),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        format!("http://[::1]:{port}/media/sample.jpg"),
        "http://0.0.0.0/a.jpg".to_string(),
        "http://[fd00::1]/a.jpg".to_string(),
        // A name that resolves to loopback.
        format!("http://localhost:{port}/media/sample.jpg"),
    ] {
        let result = strict.probe(&url, ANY).await;
        assert!(
            matches!(&result, Err(MediaError::InvalidUrl(m)) if m.contains("non-public") || m.contains("not publicly reachable")),
            "{url}: {result:?}"
        );
    }
}

#[actix_web::test]
async fn redirects_are_checked_on_every_hop() {
    let h = Harness::start().await;
    // The allow-listed simulator redirects to a loopback port that is not allow-listed.
    let target = "http://127.0.0.1:9/secret.jpg";
    let url = format!("{}/media/redirect?to={target}", h.sim.base_url);
    let result = h.media.probe(&url, ANY).await;
    assert!(
        matches!(&result, Err(MediaError::InvalidUrl(m)) if m.contains("non-public")),
        "{result:?}"
    );
    // A redirect to an allowed file is followed.
    let ok = format!(
        "{}/media/redirect?to={}/media/sample.png",
        h.sim.base_url, h.sim.base_url
    );
    assert_eq!(
        h.media.probe(&ok, ANY).await.unwrap().kind,
        MediaKind::Image
    );
}
