//! `service config check`, run as the built binary: every problem of a configuration listed at
//! once with exit code 1, or the effective values as TOML with every secret redacted.

use crate::config::service;

/// Every secret key (as `SERVICE__…` names it) with a distinct, valid value.
const SECRETS: &[(&str, &str)] = &[
    (
        "SERVICE__SECRETS__SESSION_KEY",
        "session-key-value-session-key-value-0001",
    ),
    (
        "SERVICE__SECRETS__TOKEN_ENCRYPTION_KEY",
        "1111111111111111111111111111111111111111111111111111111111111111",
    ),
    (
        "SERVICE__SECRETS__PREVIOUS_TOKEN_ENCRYPTION_KEYS",
        "2222222222222222222222222222222222222222222222222222222222222222",
    ),
    (
        "SERVICE__SECRETS__OPERATOR_TOKEN",
        "operator-token-value-0003",
    ),
    ("SERVICE__AUTH__CLIENT_SECRET", "oidc-client-secret-0004"),
    ("SERVICE__OAUTH__META_CLIENT_SECRET", "meta-secret-0005"),
    (
        "SERVICE__OAUTH__INSTAGRAM_LOGIN_CLIENT_SECRET",
        "instagram-secret-0006",
    ),
    (
        "SERVICE__OAUTH__THREADS_CLIENT_SECRET",
        "threads-secret-0007",
    ),
    ("SERVICE__OAUTH__TIKTOK_CLIENT_SECRET", "tiktok-secret-0008"),
    ("SERVICE__OAUTH__GOOGLE_CLIENT_SECRET", "google-secret-0009"),
    ("SERVICE__OAUTH__X_CLIENT_SECRET", "x-secret-0010"),
];

#[test]
fn a_bad_configuration_has_every_problem_listed_and_exit_code_1() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(
        &file,
        "[server]\npublic_url = \"ftp://example.com\"\nmax_connections = 0\n\
         trusted_proxies = [\"not-an-address\"]\n\
         [publishing]\nactor_arbiters = 0\n\
         [secrets]\nsession_key = \"short\"\n",
    )
    .unwrap();
    let output = service()
        .current_dir(dir.path())
        .args(["config", "check", "--config"])
        .arg(&file)
        .env("SERVICE__SECRETS__TOKEN_ENCRYPTION_KEY", "not hex")
        .env("SERVICE__COLLECTOR__TIME_ZONE", "Nowhere/Atlantis")
        .env("SERVICE__AUTH__SIGNIN_BURST", "0")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for key in [
        "`secrets.session_key`: must be at least 32 characters",
        "`secrets.token_encryption_key`",
        "missing secret `secrets.operator_token`",
        "`server.max_connections`",
        "`publishing.actor_arbiters`",
        "`server.public_url`",
        "`collector.time_zone / collector.run_at`",
        "`server.trusted_proxies`",
        "`auth.signin_burst`",
    ] {
        assert!(stderr.contains(key), "{key} missing from:\n{stderr}");
    }
    assert!(stderr.contains("9 problems"), "{stderr}");
    assert!(output.stdout.is_empty());
}

#[test]
fn a_configuration_that_does_not_load_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let output = service()
        .current_dir(dir.path())
        .args(["config", "check"])
        .env("SERVICE__SERVER__MAX_CONNECTIONS", "many")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("configuration could not be read"),
        "{stderr}"
    );
    assert!(
        stderr.contains("MAX_CONNECTIONS"),
        "names the key: {stderr}"
    );
}

#[test]
fn every_value_that_does_not_load_is_reported_beside_the_other_problems() {
    let dir = tempfile::tempdir().unwrap();
    let output = service()
        .current_dir(dir.path())
        .args(["config", "check"])
        .env("SERVICE__SERVER__MAX_CONNECTIONS", "many")
        .env("SERVICE__SCHEDULER__MAX_SLEEP_MS", "soon")
        .env(
            "SERVICE__SECRETS__OPERATOR_TOKEN",
            "operator-token-value-0003",
        )
        .env(
            "SERVICE__SECRETS__OPERATOR_TOKEN_FILE",
            "/nonexistent/token",
        )
        .env("SERVICE__COLLECTOR__TIME_ZONE", "Nowhere/Atlantis")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for expected in [
        "MAX_CONNECTIONS",
        "MAX_SLEEP_MS",
        "set SERVICE__SECRETS__OPERATOR_TOKEN or SERVICE__SECRETS__OPERATOR_TOKEN_FILE, not both",
        "`collector.time_zone / collector.run_at`",
        "missing secret `secrets.session_key`",
    ] {
        assert!(
            stderr.contains(expected),
            "{expected} missing from:\n{stderr}"
        );
    }
    assert!(output.stdout.is_empty());
}

#[test]
fn a_good_configuration_prints_its_effective_values_with_every_secret_redacted() {
    let dir = tempfile::tempdir().unwrap();
    // config.toml in the working directory, overridden by the environment.
    std::fs::write(
        dir.path().join("config.toml"),
        "[server]\nbind = \"127.0.0.1:7001\"\nmax_connections = 77\n\
         [database]\nurl = \"postgres://svc:db-password-0011@db.example/social\"\n",
    )
    .unwrap();
    let mut command = service();
    command
        .current_dir(dir.path())
        .args(["config", "check"])
        .env("SERVICE__SERVER__BIND", "127.0.0.1:7002");
    for (key, value) in SECRETS {
        command.env(key, value);
    }
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    for (_, value) in SECRETS {
        assert!(!stdout.contains(value), "{value} printed:\n{stdout}");
    }
    assert!(!stdout.contains("db-password-0011"), "{stdout}");
    for (key, _) in SECRETS {
        let key = key.rsplit("__").next().unwrap().to_lowercase();
        assert!(
            stdout.contains(&format!("{key} = \"[redacted]\"")),
            "{key} not redacted:\n{stdout}"
        );
    }
    assert!(stdout.contains("url = \"postgres://svc:redacted@db.example/social\""));
    assert!(stdout.contains("\n[server]\n"), "{stdout}");
    assert!(
        stdout.contains("bind = \"127.0.0.1:7002\""),
        "the environment wins"
    );
    assert!(stdout.contains("max_connections = 77"), "the file's value");
}
