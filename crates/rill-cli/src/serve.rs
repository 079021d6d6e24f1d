//! `rill serve`: the browser instrument and WebSocket streams.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use rill_server::AppState;

use crate::args::ModelArgs;
use crate::live;

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub model: ModelArgs,

    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,

    /// Most simultaneous listeners (default: as many as the CPU sustains in real
    /// time, measured at start-up; never more than that).
    #[arg(long, value_name = "N")]
    pub max_sessions: Option<usize>,
}

pub fn run(args: ServeArgs) -> Result<()> {
    // Bind first: a taken port fails before the model is loaded.
    let std_listener = std::net::TcpListener::bind(args.addr).with_context(|| {
        format!(
            "cannot listen on {} (in use? try --addr 127.0.0.1:0)",
            args.addr
        )
    })?;
    std_listener.set_nonblocking(true)?;
    let addr = std_listener.local_addr()?;
    let loaded = live::start_engine(&args.model, args.max_sessions)?;
    let state = Arc::new(AppState {
        engine: loaded.engine,
        info: loaded.info,
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(std_listener)?;
        eprintln!("rill is listening on http://{addr}/  (Ctrl-C stops)");
        rill_server::run(listener, state).await
    })
}
