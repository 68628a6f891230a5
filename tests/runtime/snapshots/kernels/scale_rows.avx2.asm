AVX2 loop kernel, 496 bytes of machine code, 0 micro-kernel calls per tile, 1 values held in registers, 1024 bytes ahead prefetched for 2 accesses:
  0000  push rbx
  0001  push rbp
  0002  push r12
  0004  push r13
  0006  push r14
  0008  push r15
  000a  mov rax, rsp
  000d  and rsp, 0xffffffffffffffc0
  0011  sub rsp, 0x80
  0018  mov [rsp], rax
  001c  mov [rsp+8], rsi
  0021  mov [rsp+0x10], rdx
  0026  mov rax, [rdi]
  0029  mov [rsp+0x30], rax
  002e  mov rax, [rdi+8]
  0032  mov [rsp+0x38], rax
  0037  mov rax, [rdi+0x10]
  003b  mov [rsp+0x40], rax
  0040  mov rax, [rsp+8]
  0045  cmp rax, [rsp+0x10]
  004a  jge 0x19e
  0050  mov [rsp+0x60], rax
  0055  mov rax, 0x400
  005f  mov [rsp+0x18], rax
  0064  mov rcx, [rsp+0x30]
  0069  mov rax, [rsp+0x60]
  006e  imul rax, 0x1000
  0075  add rcx, rax
  0078  mov [rsp+0x48], rcx
  007d  mov rcx, [rsp+0x38]
  0082  mov rax, [rsp+0x60]
  0087  imul rax, 4
  008b  add rcx, rax
  008e  mov [rsp+0x50], rcx
  0093  mov rcx, [rsp+0x40]
  0098  mov rax, [rsp+0x60]
  009d  imul rax, 0x1000
  00a4  add rcx, rax
  00a7  mov [rsp+0x58], rcx
  00ac  mov rdx, [rsp+0x48]
  00b1  mov rsi, [rsp+0x50]
  00b6  mov rdi, [rsp+0x58]
  00bb  vbroadcastss ymm0, [rsi]
  00c0  mov r15, [rsp+0x18]
  00c5  xor rbx, rbx
  00c8  lea r14, [r15-0x20]
  00cc  cmp rbx, r14
  00cf  jg short 0x138
  00d1  vmovups ymm1, [rdx+rbx*4]
  00d6  vmulps ymm2, ymm1, ymm0
  00da  vmovups [rdi+rbx*4], ymm2
  00df  vmovups ymm1, [rdx+rbx*4+0x20]
  00e5  vmulps ymm2, ymm1, ymm0
  00e9  vmovups [rdi+rbx*4+0x20], ymm2
  00ef  vmovups ymm1, [rdx+rbx*4+0x40]
  00f5  vmulps ymm2, ymm1, ymm0
  00f9  vmovups [rdi+rbx*4+0x40], ymm2
  00ff  vmovups ymm1, [rdx+rbx*4+0x60]
  0105  vmulps ymm2, ymm1, ymm0
  0109  vmovups [rdi+rbx*4+0x60], ymm2
  010f  prefetcht0 [rdx+rbx*4+0x400]
  0117  prefetcht0 [rdx+rbx*4+0x440]
  011f  prefetchw [rdi+rbx*4+0x400]
  0127  prefetchw [rdi+rbx*4+0x440]
  012f  add rbx, 0x20
  0133  cmp rbx, r14
  0136  jle short 0xd1
  0138  lea r14, [r15-8]
  013c  cmp rbx, r14
  013f  jg short 0x158
  0141  vmovups ymm1, [rdx+rbx*4]
  0146  vmulps ymm2, ymm1, ymm0
  014a  vmovups [rdi+rbx*4], ymm2
  014f  add rbx, 8
  0153  cmp rbx, r14
  0156  jle short 0x141
  0158  cmp rbx, r15
  015b  jge short 0x183
  015d  mov rcx, r15
  0160  sub rcx, rbx
  0163  lea rax, [0x1b0]
  016a  neg rcx
  016d  vmovdqu ymm15, [rax+rcx*4+0x20]
  0173  vmaskmovps ymm1, ymm15, [rdx+rbx*4]
  0179  vmulps ymm2, ymm1, ymm0
  017d  vmaskmovps [rdi+rbx*4], ymm15, ymm2
  0183  mov rax, [rsp+0x60]
  0188  add rax, 1
  018e  mov [rsp+0x60], rax
  0193  cmp rax, [rsp+0x10]
  0198  jl 0x64
  019e  mov rsp, [rsp]
  01a2  pop r15
  01a4  pop r14
  01a6  pop r13
  01a8  pop r12
  01aa  pop rbp
  01ab  pop rbx
  01ac  vzeroupper
  01af  ret
  constants (64 bytes):
    ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff
    00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000

AVX2 loop kernel, 382 bytes of machine code, 0 micro-kernel calls per tile, 1 values held in registers:
  0000  push rbx
  0001  push rbp
  0002  push r12
  0004  push r13
  0006  push r14
  0008  push r15
  000a  mov rax, rsp
  000d  and rsp, 0xffffffffffffffc0
  0011  sub rsp, 0x80
  0018  mov [rsp], rax
  001c  mov [rsp+8], rsi
  0021  mov [rsp+0x10], rdx
  0026  mov rax, [rdi]
  0029  mov [rsp+0x30], rax
  002e  mov rax, [rdi+8]
  0032  mov [rsp+0x38], rax
  0037  mov rax, [rsp+0x10]
  003c  sub rax, [rsp+8]
  0041  jle 0x128
  0047  mov [rsp+0x18], rax
  004c  mov rcx, [rsp+0x30]
  0051  mov rax, [rsp+8]
  0056  lea rcx, [rcx+rax*4]
  005a  mov [rsp+0x40], rcx
  005f  mov rcx, [rsp+0x38]
  0064  mov rax, [rsp+8]
  0069  lea rcx, [rcx+rax*4]
  006d  mov [rsp+0x48], rcx
  0072  mov rdx, [rsp+0x40]
  0077  mov rsi, [rsp+0x48]
  007c  vbroadcastss ymm0, [0x13a]
  0085  mov r15, [rsp+0x18]
  008a  xor rbx, rbx
  008d  lea r14, [r15-0x20]
  0091  cmp rbx, r14
  0094  jg short 0xdd
  0096  vmovups ymm1, [rdx+rbx*4]
  009b  vmulps ymm2, ymm1, ymm0
  009f  vmovups [rsi+rbx*4], ymm2
  00a4  vmovups ymm1, [rdx+rbx*4+0x20]
  00aa  vmulps ymm2, ymm1, ymm0
  00ae  vmovups [rsi+rbx*4+0x20], ymm2
  00b4  vmovups ymm1, [rdx+rbx*4+0x40]
  00ba  vmulps ymm2, ymm1, ymm0
  00be  vmovups [rsi+rbx*4+0x40], ymm2
  00c4  vmovups ymm1, [rdx+rbx*4+0x60]
  00ca  vmulps ymm2, ymm1, ymm0
  00ce  vmovups [rsi+rbx*4+0x60], ymm2
  00d4  add rbx, 0x20
  00d8  cmp rbx, r14
  00db  jle short 0x96
  00dd  lea r14, [r15-8]
  00e1  cmp rbx, r14
  00e4  jg short 0xfd
  00e6  vmovups ymm1, [rdx+rbx*4]
  00eb  vmulps ymm2, ymm1, ymm0
  00ef  vmovups [rsi+rbx*4], ymm2
  00f4  add rbx, 8
  00f8  cmp rbx, r14
  00fb  jle short 0xe6
  00fd  cmp rbx, r15
  0100  jge short 0x128
  0102  mov rcx, r15
  0105  sub rcx, rbx
  0108  lea rax, [0x13e]
  010f  neg rcx
  0112  vmovdqu ymm15, [rax+rcx*4+0x20]
  0118  vmaskmovps ymm1, ymm15, [rdx+rbx*4]
  011e  vmulps ymm2, ymm1, ymm0
  0122  vmaskmovps [rsi+rbx*4], ymm15, ymm2
  0128  mov rsp, [rsp]
  012c  pop r15
  012e  pop r14
  0130  pop r13
  0132  pop r12
  0134  pop rbp
  0135  pop rbx
  0136  vzeroupper
  0139  ret
  constants (68 bytes):
    3f000000 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff
    ffffffff 00000000 00000000 00000000 00000000 00000000 00000000 00000000
    00000000

AVX2 loop kernel, 607 bytes of machine code, 0 micro-kernel calls per tile, 2 values held in registers, 1024 bytes ahead prefetched for 2 accesses:
  0000  push rbx
  0001  push rbp
  0002  push r12
  0004  push r13
  0006  push r14
  0008  push r15
  000a  mov rax, rsp
  000d  and rsp, 0xffffffffffffffc0
  0011  sub rsp, 0x80
  0018  mov [rsp], rax
  001c  mov [rsp+8], rsi
  0021  mov [rsp+0x10], rdx
  0026  mov rax, [rdi]
  0029  mov [rsp+0x30], rax
  002e  mov rax, [rdi+8]
  0032  mov [rsp+0x38], rax
  0037  mov rax, [rdi+0x10]
  003b  mov [rsp+0x40], rax
  0040  mov rax, [rsp+8]
  0045  cmp rax, [rsp+0x10]
  004a  jge 0x209
  0050  mov [rsp+0x60], rax
  0055  mov rax, 0x400
  005f  mov [rsp+0x18], rax
  0064  mov rcx, [rsp+0x30]
  0069  mov rax, [rsp+0x60]
  006e  imul rax, 0x1000
  0075  add rcx, rax
  0078  mov [rsp+0x48], rcx
  007d  mov rcx, [rsp+0x38]
  0082  mov rax, [rsp+0x60]
  0087  imul rax, 4
  008b  add rcx, rax
  008e  mov [rsp+0x50], rcx
  0093  mov rcx, [rsp+0x40]
  0098  mov rax, [rsp+0x60]
  009d  imul rax, 0x1000
  00a4  add rcx, rax
  00a7  mov [rsp+0x58], rcx
  00ac  mov rdx, [rsp+0x48]
  00b1  mov rsi, [rsp+0x50]
  00b6  mov rdi, [rsp+0x58]
  00bb  vbroadcastss ymm0, [0x21b]
  00c4  vbroadcastss ymm1, [rsi]
  00c9  mov r15, [rsp+0x18]
  00ce  xor rbx, rbx
  00d1  lea r14, [r15-0x20]
  00d5  cmp rbx, r14
  00d8  jg 0x185
  00de  vmovups ymm2, [rdx+rbx*4]
  00e3  vmaxps ymm3, ymm2, ymm1
  00e7  vcmpunordps ymm4, ymm2, ymm2
  00ec  vblendvps ymm3, ymm3, ymm2, ymm4
  00f2  vsubps ymm2, ymm3, ymm0
  00f6  vmovups [rdi+rbx*4], ymm2
  00fb  vmovups ymm2, [rdx+rbx*4+0x20]
  0101  vmaxps ymm3, ymm2, ymm1
  0105  vcmpunordps ymm4, ymm2, ymm2
  010a  vblendvps ymm3, ymm3, ymm2, ymm4
  0110  vsubps ymm2, ymm3, ymm0
  0114  vmovups [rdi+rbx*4+0x20], ymm2
  011a  vmovups ymm2, [rdx+rbx*4+0x40]
  0120  vmaxps ymm3, ymm2, ymm1
  0124  vcmpunordps ymm4, ymm2, ymm2
  0129  vblendvps ymm3, ymm3, ymm2, ymm4
  012f  vsubps ymm2, ymm3, ymm0
  0133  vmovups [rdi+rbx*4+0x40], ymm2
  0139  vmovups ymm2, [rdx+rbx*4+0x60]
  013f  vmaxps ymm3, ymm2, ymm1
  0143  vcmpunordps ymm4, ymm2, ymm2
  0148  vblendvps ymm3, ymm3, ymm2, ymm4
  014e  vsubps ymm2, ymm3, ymm0
  0152  vmovups [rdi+rbx*4+0x60], ymm2
  0158  prefetcht0 [rdx+rbx*4+0x400]
  0160  prefetcht0 [rdx+rbx*4+0x440]
  0168  prefetchw [rdi+rbx*4+0x400]
  0170  prefetchw [rdi+rbx*4+0x440]
  0178  add rbx, 0x20
  017c  cmp rbx, r14
  017f  jle 0xde
  0185  lea r14, [r15-8]
  0189  cmp rbx, r14
  018c  jg short 0x1b4
  018e  vmovups ymm2, [rdx+rbx*4]
  0193  vmaxps ymm3, ymm2, ymm1
  0197  vcmpunordps ymm4, ymm2, ymm2
  019c  vblendvps ymm3, ymm3, ymm2, ymm4
  01a2  vsubps ymm2, ymm3, ymm0
  01a6  vmovups [rdi+rbx*4], ymm2
  01ab  add rbx, 8
  01af  cmp rbx, r14
  01b2  jle short 0x18e
  01b4  cmp rbx, r15
  01b7  jge short 0x1ee
  01b9  mov rcx, r15
  01bc  sub rcx, rbx
  01bf  lea rax, [0x21f]
  01c6  neg rcx
  01c9  vmovdqu ymm15, [rax+rcx*4+0x20]
  01cf  vmaskmovps ymm2, ymm15, [rdx+rbx*4]
  01d5  vmaxps ymm3, ymm2, ymm1
  01d9  vcmpunordps ymm4, ymm2, ymm2
  01de  vblendvps ymm3, ymm3, ymm2, ymm4
  01e4  vsubps ymm2, ymm3, ymm0
  01e8  vmaskmovps [rdi+rbx*4], ymm15, ymm2
  01ee  mov rax, [rsp+0x60]
  01f3  add rax, 1
  01f9  mov [rsp+0x60], rax
  01fe  cmp rax, [rsp+0x10]
  0203  jl 0x64
  0209  mov rsp, [rsp]
  020d  pop r15
  020f  pop r14
  0211  pop r13
  0213  pop r12
  0215  pop rbp
  0216  pop rbx
  0217  vzeroupper
  021a  ret
  constants (68 bytes):
    3f800000 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff
    ffffffff 00000000 00000000 00000000 00000000 00000000 00000000 00000000
    00000000
