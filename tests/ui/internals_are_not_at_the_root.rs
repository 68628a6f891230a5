// The compiler's internals are not modules of the crate users depend on (the project's own
// tests reach them through the hidden `jitfuse::internals`): a program naming one at the root
// does not compile.
use jitfuse::exec::Executable;

fn main() {
    let _ = std::mem::size_of::<Executable>();
}
