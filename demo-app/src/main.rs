//! The thumbnail list demo.

fn main() {
    eprintln!("demo-app: the list demo is not part of this build yet; see README.md");
    std::process::exit(2);
}
