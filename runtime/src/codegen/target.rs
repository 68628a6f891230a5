//! What the code generator emits code for: an instruction-set level and the tile size of tiled
//! kernels (and how library products split their work). The host's target is read once (CPU
//! detection, `JITFUSE_ISA`, `JITFUSE_MICRO_TILE`, `JITFUSE_SCHEDULE`, `JITFUSE_GEMM_SPLIT`);
//! `codegen::compile` and everything below it take a `&Target` and read neither the environment
//! nor a thread-local, so a test can compile one program at several levels side by side.

use once_cell::sync::Lazy;

/// Instruction-set levels, lowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Isa {
    /// Cranelift only, transcendentals inline (every CPU Cranelift supports).
    Portable,
    /// AVX2 + FMA: f32 loop kernels emitted as 8-lane code (`codegen::x86` at ymm width),
    /// 8-lane micro-kernels; row and reduction kernels by Cranelift.
    Avx2,
    /// AVX-512F: loop, row and reduction kernels emitted as 16-lane code (`codegen::x86`),
    /// 16-lane micro-kernels.
    Avx512,
}

impl Isa {
    /// The name `JITFUSE_ISA` takes.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Portable => "portable",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
        }
    }

    /// The level named `s` (as `name` spells it).
    pub fn parse(s: &str) -> Option<Isa> {
        [Isa::Portable, Isa::Avx2, Isa::Avx512]
            .into_iter()
            .find(|i| i.name() == s)
    }

    /// The best level this CPU runs.
    pub fn detected() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx512f") {
                return Isa::Avx512;
            }
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                return Isa::Avx2;
            }
        }
        Isa::Portable
    }

    /// Every level this CPU runs, lowest first (what the differential suites compare).
    pub fn supported() -> Vec<Isa> {
        let best = Isa::detected();
        [Isa::Portable, Isa::Avx2, Isa::Avx512]
            .into_iter()
            .filter(|&i| i <= best)
            .collect()
    }
}

impl std::fmt::Display for Isa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Elements per tile of a tiled kernel by default: a multiple of every vector width (4, 8, 16
/// lanes), so only a range's last tile has a partial vector; 4 KiB per f32 tile, L1-resident.
pub const DEFAULT_TILE: usize = 1024;

/// How products on faer's `gemm` split their work, where a measurement forces one
/// (`JITFUSE_GEMM_SPLIT=panels|gemm`; by default each product's shape decides): bands of the
/// output on rayon's threads, or gemm's own split.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GemmSplit {
    Bands,
    Gemm,
}

/// What a program is compiled for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    pub isa: Isa,
    /// Whether the rustc micro-kernels of `isa` may be called: true exactly when the CPU runs
    /// `isa` (`Target::emit_only` builds code that is inspected, never run).
    pub micro: bool,
    /// Elements per tile of tiled kernels (a multiple of 16, 64..=8192).
    pub tile: usize,
    /// AVX-512 loop kernels tiled through micro-kernels first rather than inline (both give
    /// the same bits; tests compare them).
    pub tiled_first: bool,
    /// Steps run in the order they were traced instead of the memory-minimising schedule
    /// (`JITFUSE_SCHEDULE=trace`, for comparisons).
    pub trace_order: bool,
    /// The split every product takes, where forced (`GemmSplit`); each compiled product
    /// carries it, so its run and its workspace figure agree.
    pub gemm_split: Option<GemmSplit>,
    /// The bytes a loop kernel moves from which the x86 backend stores its outputs around the
    /// caches (`x86::Emitter::streamed`): the last-level cache's size.
    pub streaming_min_bytes: usize,
}

static HOST: Lazy<Target> = Lazy::new(|| {
    let best = Isa::detected();
    let isa = match std::env::var("JITFUSE_ISA") {
        Err(_) => best,
        Ok(s) => match Isa::parse(&s) {
            Some(i) if i <= best => i,
            Some(i) => {
                eprintln!("jitfuse: JITFUSE_ISA={i}: this CPU runs at most {best}; using {best}");
                best
            }
            None => {
                eprintln!(
                    "jitfuse: JITFUSE_ISA={s:?} is not one of portable, avx2, avx512; using {best}"
                );
                best
            }
        },
    };
    let tile = std::env::var("JITFUSE_MICRO_TILE")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .map_or(DEFAULT_TILE, |n| (n.clamp(64, 8192) / 16) * 16);
    Target {
        isa,
        micro: isa != Isa::Portable,
        tile,
        tiled_first: false,
        trace_order: std::env::var_os("JITFUSE_SCHEDULE").is_some_and(|v| v == "trace"),
        gemm_split: match std::env::var("JITFUSE_GEMM_SPLIT").as_deref() {
            Ok("panels") => Some(GemmSplit::Bands),
            Ok("gemm") => Some(GemmSplit::Gemm),
            _ => None,
        },
        streaming_min_bytes: last_level_cache_bytes(),
    }
});

/// The last-level cache's size, from Linux's sysfs (32 MiB where it does not say).
fn last_level_cache_bytes() -> usize {
    (0..8)
        .filter_map(|i| {
            let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
            let level = std::fs::read_to_string(format!("{dir}/level")).ok()?;
            let size = std::fs::read_to_string(format!("{dir}/size")).ok()?;
            let kib: usize = size.trim().strip_suffix('K')?.parse().ok()?;
            Some((level.trim().parse::<u32>().ok()?, kib << 10))
        })
        .max()
        .map_or(32 << 20, |(_, bytes)| bytes)
}

impl Target {
    /// The target programs are compiled for by default: the best level of this CPU, capped by
    /// `JITFUSE_ISA=portable|avx2|avx512`; `JITFUSE_MICRO_TILE=n` sets the tile and
    /// `JITFUSE_SCHEDULE=trace` keeps trace order and `JITFUSE_GEMM_SPLIT=panels|gemm` forces
    /// the products' split (for measurements). Read once: nothing
    /// below compilation reads the environment.
    pub fn host() -> &'static Target {
        &HOST
    }

    /// The host target at level `isa`, capped by what the CPU runs.
    pub fn at(isa: Isa) -> Target {
        let isa = isa.min(Isa::detected());
        Target {
            isa,
            micro: isa != Isa::Portable,
            ..Target::host().clone()
        }
    }

    /// Code for level `isa` whether or not this CPU runs it, without micro-kernel calls: for
    /// tests that inspect the machine code of another CPU. Never run what it builds.
    pub fn emit_only(isa: Isa) -> Target {
        Target {
            isa,
            micro: false,
            tile: DEFAULT_TILE,
            tiled_first: false,
            trace_order: false,
            gemm_split: None,
            // (Not this machine's cache: listings that do not depend on where they are made.)
            streaming_min_bytes: 32 << 20,
        }
    }

    /// The same target, AVX-512 loop kernels tiled first (`tiled_first`).
    pub fn tiled_first(mut self, on: bool) -> Target {
        self.tiled_first = on;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_named_parsed_and_capped_by_the_cpu() {
        for isa in [Isa::Portable, Isa::Avx2, Isa::Avx512] {
            assert_eq!(Isa::parse(isa.name()), Some(isa));
            let t = Target::at(isa);
            assert!(t.isa <= Isa::detected() && t.isa <= isa);
            assert_eq!(t.micro, t.isa != Isa::Portable);
            let e = Target::emit_only(isa);
            assert_eq!((e.isa, e.micro), (isa, false));
        }
        assert_eq!(Isa::parse("sse2"), None);
        let s = Isa::supported();
        assert_eq!(s.first(), Some(&Isa::Portable));
        assert_eq!(s.last(), Some(&Isa::detected()));
        assert!(Target::host().isa <= Isa::detected());
        assert!(Target::at(Isa::Avx512).tiled_first(true).tiled_first);
    }
}
