# The service's container image: the release binary on Debian, run as an unprivileged user, with
# its SQLite database (when it uses one) and uploaded media (unless they go to S3) on the /data
# volume.
#
#   docker build -t social-service .        (or: podman build --format docker -t social-service .)
#   docker run -d -p 8080:8080 -v social-data:/data --env-file secrets.env social-service
#
# compose.yaml runs it behind a TLS proxy with PostgreSQL; docs/operations.md has the details.

FROM docker.io/library/rust:1.95-slim-bookworm AS build
# `service --version` names the commit; the build context carries no .git.
ARG GIT_COMMIT=unknown
WORKDIR /src
COPY . .
RUN GIT_COMMIT="$GIT_COMMIT" cargo build --release --locked --bin service \
 && install -m 0755 target/release/service /usr/local/bin/service

FROM docker.io/library/debian:bookworm-slim
# The platforms' and the identity provider's certificates are checked against the system's roots.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 service \
 && useradd --system --uid 10001 --gid service --home-dir /data --no-create-home \
      --shell /usr/sbin/nologin service \
 && install -d -o service -g service -m 0750 /data
COPY --from=build /usr/local/bin/service /usr/local/bin/service

# Listen on every interface inside the container, and log JSON lines. The database is not set
# here, so that a config file or a SERVICE__DATABASE__URL(_FILE) alone decides it; by default it
# is `sqlite://data/service.db`, relative to the working directory `/`: the file is on the volume.
ENV SERVICE__SERVER__BIND=0.0.0.0:8080 \
    SERVICE__LOGGING__FORMAT=json
USER 10001:10001
WORKDIR /
VOLUME ["/data"]
EXPOSE 8080
# `service healthcheck` reads server.bind from the same configuration and asks /readyz.
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
  CMD ["/usr/local/bin/service", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/service"]
CMD ["serve"]
