//! The Readout desktop app: a Tauri shell over the `readout` library. The commands here only
//! parse what the web UI sends, call the library's pipeline (the same one the CLI calls), and
//! hand back its results; scoring, metrics and the result-file format all live in the library.
//! Long work runs on a blocking thread; evaluation progress streams over an IPC channel and a
//! cancel flag is honoured between rows, leaving a valid partial result file.

pub mod commands;
pub mod contract;
pub mod error;
pub mod state;

/// Build and run the app.
pub fn run() {
    tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .setup(|app| {
            use tauri::Manager;
            let fallback = || std::env::temp_dir().join("readout");
            let config = app.path().app_config_dir().unwrap_or_else(|_| fallback());
            let data = app.path().app_data_dir().unwrap_or_else(|_| fallback());
            app.manage(state::AppState::new(config.join("settings.json"), data));
            Ok(())
        })
        .invoke_handler(commands::handler())
        .run(tauri::generate_context!())
        .unwrap_or_else(|e| {
            eprintln!("readout: the app could not start: {e}");
            std::process::exit(1);
        });
}
