pub use jitfuse_runtime::*; pub use jitfuse_macros::jit;
