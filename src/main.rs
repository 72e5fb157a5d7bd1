//! The `readout` command: parse the arguments, call the library, present the answer.
//! Nothing here scores, combines or measures; that all lives in the library.

mod cli;

fn main() {
    let code = match cli::run() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("readout: error: {}", cli::describe(&err));
            cli::exit_code(&err)
        }
    };
    std::process::exit(code);
}
