//! Build script: sets `GIT_COMMIT` to the short hash of the commit being built, for
//! `service --version`. A `GIT_COMMIT` in the build's environment wins (a container build has no
//! `.git`; the Dockerfile passes it as a build argument); outside a checkout it is `unknown`.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=GIT_COMMIT");
    let given = std::env::var("GIT_COMMIT")
        .ok()
        .map(|commit| commit.trim().to_string())
        .filter(|commit| !commit.is_empty());
    let commit = given
        .or_else(|| git(&["rev-parse", "--short", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=GIT_COMMIT={commit}");
    // A new commit moves the current branch's ref file, a checkout rewrites HEAD. In a git
    // worktree `.git` is a file, so git itself says where both live. Only files that exist are
    // named: cargo reruns the script on every build for a missing one.
    let mut watched = vec![".git/HEAD".to_string()];
    watched.extend(git(&["rev-parse", "--git-path", "HEAD"]));
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.extend(git(&["rev-parse", "--git-path", &reference]));
    }
    watched.extend(git(&["rev-parse", "--git-path", "packed-refs"]));
    for path in watched {
        if std::path::Path::new(&path).is_file() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
