//! `readout mcp`: the MCP server of `readout-service` on standard input and output, the model
//! loaded once, at start. Standard output carries JSON-RPC only: messages go to standard error.

use super::ModelArgs;
use anyhow::{Context, Result};
use clap::Args;
use std::sync::Arc;

#[derive(Args)]
pub struct McpArgs {
    #[command(flatten)]
    model: ModelArgs,
}

/// Load the model, then answer MCP requests until the client closes standard input.
pub fn run(a: McpArgs) -> Result<i32> {
    let engine = a.model.load()?;
    let info = engine.info();
    eprintln!(
        "readout mcp: {} loaded ({}); serving the `score` tool on standard input and output",
        info.name, info.device
    );
    readout_service::mcp::serve_stdio(Arc::new(engine)).context("serving MCP")?;
    Ok(0)
}
