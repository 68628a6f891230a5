//! The description of a row kernel, independent of any backend: the collapsed row dimensions,
//! each access with its strides (one affine map per read and write), the values read per
//! element and per row. The shared lowering (`codegen::lower::row`) turns it into the sweeps
//! every backend spells; the partition asks it whether a row group can be built, and the
//! executor and the buffer plan ask it the kernel's extent and in-place pairs.

use super::collapse;
use crate::fusion::partition::{const_value, read_map, Affine, Partition, RowKernel, Step};
use crate::ir::{Graph, Op, ValueId};
use crate::{shape, DType};
use std::collections::{HashMap, HashSet};

pub struct Access {
    pub ptr: usize,
    pub dtype: DType,
    pub offset: i64,
    pub o_strides: Vec<i64>,
    /// Stride along the row run (0 for row-level values).
    pub i_stride: i64,
}

pub struct RowDescription {
    /// Collapsed row dims.
    pub o_dims: Vec<usize>,
    /// Elements in one row.
    pub n: usize,
    pub accesses: Vec<Access>,
    /// External values read per element.
    pub elem_reads: HashMap<ValueId, usize>,
    /// External values read per row.
    pub row_reads: HashMap<ValueId, usize>,
    /// Access of each output.
    pub outs: Vec<usize>,
    pub members: HashSet<ValueId>,
}

pub fn describe(g: &Graph, p: &Partition, rk: &RowKernel) -> Result<RowDescription, ValueId> {
    let grp = &rk.group;
    let members: HashSet<ValueId> = grp.members.iter().copied().collect();
    let seed = *grp
        .members
        .iter()
        .find(|m| matches!(g.node(**m).op, Op::Reduce(..)))
        .unwrap();
    let no = grp.o.len();
    let s_full = grp.full_shape();
    let ptr_of = |x: ValueId| {
        rk.inputs
            .iter()
            .position(|y| *y == x)
            .unwrap_or_else(|| panic!("row kernel input %{} missing: {:?}\n{}", x.0, rk, g))
    };
    // (ptr, dtype, offset, strides over O, strides over I or None)
    let mut raw: Vec<(usize, DType, i64, Vec<i64>, Vec<i64>)> = Vec::new();
    let mut elem_reads = HashMap::new();
    let mut row_reads = HashMap::new();
    for &m in &grp.members {
        let n = g.node(m);
        if matches!(n.op, Op::Broadcast | Op::Reshape) {
            continue; // reads a member
        }
        let element_level = matches!(n.op, Op::Reduce(..)) || grp.is_element_shape(&n.shape);
        for &x in &n.inputs {
            if members.contains(&x) || const_value(g, x).is_some() {
                continue;
            }
            let map = if element_level {
                &mut elem_reads
            } else {
                &mut row_reads
            };
            if map.contains_key(&x) {
                continue;
            }
            let Affine {
                root,
                offset: off,
                strides: st,
            } = read_map(g, p, x);
            let (os, is) = if element_level {
                (st[..no].to_vec(), st[no..].to_vec())
            } else {
                (st[..no].to_vec(), vec![0; grp.i.len()])
            };
            raw.push((ptr_of(root), g.node(x).dtype, off, os, is));
            map.insert(x, raw.len() - 1);
        }
    }
    let mut outs = Vec::new();
    for (j, &o) in rk.outputs.iter().enumerate() {
        let n = g.node(o);
        let (os, is) = if grp.is_element_shape(&n.shape) && !matches!(n.op, Op::Reduce(..)) {
            let st: Vec<i64> = shape::strides(&s_full)
                .into_iter()
                .map(|s| s as i64)
                .collect();
            (st[..no].to_vec(), st[no..].to_vec())
        } else {
            (
                shape::strides(&grp.o)
                    .into_iter()
                    .map(|s| s as i64)
                    .collect(),
                vec![0; grp.i.len()],
            )
        };
        raw.push((rk.inputs.len() + j, n.dtype, 0, os, is));
        outs.push(raw.len() - 1);
    }
    // The row must be one run (or a broadcast) for every access.
    let i_strides: Vec<Vec<i64>> = raw.iter().map(|r| r.4.clone()).collect();
    let (i_dims, i_st) = collapse(&grp.i, &i_strides);
    if i_dims.len() > 1 {
        return Err(seed);
    }
    let n: usize = grp.i.iter().product();
    let o_strides: Vec<Vec<i64>> = raw.iter().map(|r| r.3.clone()).collect();
    let (mut o_dims, mut o_st) = collapse(&grp.o, &o_strides);
    if o_dims.is_empty() {
        o_dims.push(1);
        for s in o_st.iter_mut() {
            s.push(0);
        }
    }
    let accesses = raw
        .into_iter()
        .enumerate()
        .map(|(a, (ptr, dtype, offset, _, _))| Access {
            ptr,
            dtype,
            offset,
            o_strides: o_st[a].clone(),
            i_stride: i_st[a].first().copied().unwrap_or(0),
        })
        .collect();
    Ok(RowDescription {
        o_dims,
        n,
        accesses,
        elem_reads,
        row_reads,
        outs,
        members,
    })
}

/// Whether one row kernel of the partition can be compiled.
pub fn check_one(g: &Graph, p: &Partition, rk: &RowKernel) -> Result<(), ValueId> {
    describe(g, p, rk).map(|_| ())
}

/// Check that every row group of the partition can be compiled; returns a
/// value of the first one that cannot.
pub fn check(g: &Graph, p: &Partition) -> Result<(), ValueId> {
    for s in &p.steps {
        if let Step::Row(rk) = s {
            describe(g, p, rk)?;
        }
    }
    Ok(())
}

/// Whether the row kernel may write element-level `output` over `input`:
/// every read of the input is at exactly the position the output is written
/// (same offset and strides, row by row). A row's reductions read it before
/// its final pass, and the final pass loads each vector's operands before
/// storing its outputs, so each element is read before it is overwritten.
pub fn inplace_ok(
    g: &Graph,
    pl: &RowDescription,
    rk: &RowKernel,
    input: ValueId,
    output: ValueId,
) -> bool {
    let (Some(pi), Some(j)) = (
        rk.inputs.iter().position(|x| *x == input),
        rk.outputs.iter().position(|x| *x == output),
    ) else {
        return false;
    };
    let n = g.node(output);
    if matches!(n.op, Op::Reduce(..)) || !rk.group.is_element_shape(&n.shape) {
        return false;
    }
    let out = &pl.accesses[pl.outs[j]];
    (pl.accesses.iter())
        .filter(|a| a.ptr == pi)
        .all(|a| same_place(a, out))
}

/// Whether input access `a` reads, row by row, exactly the elements output access `out`
/// writes: the condition for writing the output over that input (`inplace_ok`), and so for
/// a kernel to allow that its output's row is written before the input's last read
/// (`RowBody::stash_homes`).
pub fn same_place(a: &Access, out: &Access) -> bool {
    a.offset == 0
        && a.o_strides == out.o_strides
        && a.i_stride == out.i_stride
        && a.dtype.size() == out.dtype.size()
}
