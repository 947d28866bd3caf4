//! `service-sim`: the platform simulator as a program of its own.

use clap::Parser;

#[derive(Parser)]
#[command(name = "service-sim", version, about)]
struct Cli {
    #[command(flatten)]
    args: service_sim::cli::SimArgs,
}

#[actix_web::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    service_sim::cli::run(Cli::parse().args).await
}
