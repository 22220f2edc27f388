//! Running the `txftl` binary as a user would, for the CLI tests.

use std::process::Command;

/// Runs `txftl ARGS`: (exit code, standard output, standard error).
pub fn txftl(args: &[&str]) -> (i32, String, String) {
    txftl_env(args, &[])
}

/// Runs `txftl ARGS` with environment variables set.
pub fn txftl_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_txftl"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run txftl");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
