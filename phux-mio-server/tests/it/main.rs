//! The integration tests of phux-mio-server, in one binary: one module per behaviour (a former
//! `tests/<behaviour>.rs` file), run against real PTYs, the real socket and the real server
//! binary (`CARGO_BIN_EXE_phux-mio-server`). Helpers live in [`support`]. Every wait polls a
//! condition against a generous deadline; nothing sleeps for correctness.
//!
//! Run one behaviour with a filter on its module: `cargo test -p phux-mio-server --test it
//! pty_echo`. The fault tests' probe child is an example of this package (see
//! [`support::faults::probe_binary`]), which a plain `cargo test -p phux-mio-server` builds.

#![forbid(unsafe_code)]

mod support;

mod bridge;
mod fault_chaos_exactly_once;
mod fault_half_close_answers;
mod fault_hostile_peers;
mod fault_large_paste;
mod fault_slow_consumer;
mod fault_stalled_child;
mod hostile_ancillary_data;
mod hostile_ledger_flood;
mod hostile_reattach;
mod hostile_screen_reply;
mod input_canonical_across_batches;
mod input_retry_after_drop;
mod input_stalled_child_unknown;
mod lease_release_on_disconnect;
mod limit_accept_retry;
mod limit_max_terminals;
mod limit_models_budget;
mod limit_spawns_per_turn;
mod log_no_secrets;
mod output_burst_delivered;
mod output_reader;
mod pty_echo;
mod pty_env_term_cwd;
mod pty_exit_status;
mod pty_group_signals_grandchild;
mod pty_kill_and_reap;
mod pty_read_after_exit;
mod pty_replies;
mod pty_signal_dispositions;
mod pty_size;
mod pty_stopped_child_backpressure;
mod pty_termios;
mod server_busy_poll;
mod server_cli_habits;
mod server_e2e;
mod signal_grandchildren;
mod signals_kill_grace;
mod signals_server_killed;
mod signals_sigterm;
mod socket_foreign_uid;
mod socket_live_refused;
mod socket_modes;
mod socket_not_a_socket;
mod socket_peer_uid;
mod socket_refuse_open_dir;
mod socket_stale;
mod stdio_flags;
mod upgrade_argv;
mod upgrade_cannot_adopt;
mod upgrade_chaos;
mod upgrade_failed_attempts_leak_nothing;
mod upgrade_failures;
mod upgrade_real_programs;
mod upgrade_signals;
mod upgrade_state_versions;
mod upgrade_stdio;
mod upgrade_swapped_binary;
mod ws_auth_refused;
mod ws_framing_violations;
mod ws_hostile_handshakes;
mod ws_listen;
mod ws_page;
mod ws_round_trip;
mod ws_upgrade;
