//! The phux reference server (the mio driver lands with its issue).

fn main() {
    eprintln!("phux-mio-server: not built yet");
    std::process::exit(2);
}
