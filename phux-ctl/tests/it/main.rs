//! The integration tests of phux-ctl, in one binary: one module per behaviour (a former
//! `tests/<behaviour>.rs` file), each running the real `phuxctl` binary
//! (`CARGO_BIN_EXE_phuxctl`) against the real server on real PTYs. Helpers live in
//! [`support`], which also says where the server binary comes from. Every wait polls a
//! condition against a generous deadline; nothing sleeps for correctness.

#![forbid(unsafe_code)]

mod support;

mod ctl_attach_history;
mod ctl_attach_notice;
mod ctl_attach_replies;
mod ctl_attach_screen_modes;
mod ctl_attach_screens;
mod ctl_attach_sizes;
mod ctl_attach_tmux;
mod ctl_cli_behaviour;
mod ctl_docs;
mod ctl_exec_bridge;
mod ctl_exit_codes;
mod ctl_journal_failures;
mod ctl_keys_tmux;
mod ctl_lease_signal;
mod ctl_new_names;
mod ctl_paste_killed;
mod ctl_paste_large;
mod ctl_paste_parts;
mod ctl_paste_safety;
mod ctl_remain_on_exit;
mod ctl_remote_truth;
mod ctl_send_exactly_once;
mod ctl_send_reported_after_restart;
mod ctl_send_resumed;
mod ctl_send_silent_key;
mod ctl_server_verbs;
mod ctl_spawn_here;
mod ctl_spawn_list_kill;
mod ctl_ssh;
mod ctl_streams_end;
mod ctl_trust;
mod ctl_upgrade;
