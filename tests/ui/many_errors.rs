use jitfuse::prelude::*;

// Every problem is reported at once, each at its own tokens.
#[jit(fast)]
const unsafe fn f<T>(w: &mut Tensor, (a, b): (f32, f32), n: &usize, s: impl Copy) -> Option<Tensor>
where
    T: Copy,
{
    let _ = (w, a, b, n, s);
    None
}

fn main() {}
