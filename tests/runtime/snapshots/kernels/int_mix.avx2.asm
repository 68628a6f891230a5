AVX2 loop kernel (i32 lanes), 517 bytes of machine code, 0 micro-kernel calls per tile, 1 values held in registers:
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
  0040  mov rax, [rsp+0x10]
  0045  sub rax, [rsp+8]
  004a  jle 0x1af
  0050  mov [rsp+0x18], rax
  0055  mov rcx, [rsp+0x30]
  005a  mov rax, [rsp+8]
  005f  lea rcx, [rcx+rax*4]
  0063  mov [rsp+0x48], rcx
  0068  mov rcx, [rsp+0x38]
  006d  mov rax, [rsp+8]
  0072  lea rcx, [rcx+rax*4]
  0076  mov [rsp+0x50], rcx
  007b  mov rcx, [rsp+0x40]
  0080  mov rax, [rsp+8]
  0085  lea rcx, [rcx+rax*4]
  0089  mov [rsp+0x58], rcx
  008e  mov rdx, [rsp+0x48]
  0093  mov rsi, [rsp+0x50]
  0098  mov rdi, [rsp+0x58]
  009d  vbroadcastss ymm0, [0x1c1]
  00a6  mov r15, [rsp+0x18]
  00ab  xor rbx, rbx
  00ae  lea r14, [r15-0x20]
  00b2  cmp rbx, r14
  00b5  jg 0x145
  00bb  vmovups ymm1, [rdx+rbx*4]
  00c0  vmovups ymm2, [rsi+rbx*4]
  00c5  vpmulld ymm3, ymm1, ymm2
  00ca  vpaddd ymm1, ymm3, ymm0
  00ce  vpmaxsd ymm3, ymm1, ymm2
  00d3  vmovups [rdi+rbx*4], ymm3
  00d8  vmovups ymm1, [rdx+rbx*4+0x20]
  00de  vmovups ymm2, [rsi+rbx*4+0x20]
  00e4  vpmulld ymm3, ymm1, ymm2
  00e9  vpaddd ymm1, ymm3, ymm0
  00ed  vpmaxsd ymm3, ymm1, ymm2
  00f2  vmovups [rdi+rbx*4+0x20], ymm3
  00f8  vmovups ymm1, [rdx+rbx*4+0x40]
  00fe  vmovups ymm2, [rsi+rbx*4+0x40]
  0104  vpmulld ymm3, ymm1, ymm2
  0109  vpaddd ymm1, ymm3, ymm0
  010d  vpmaxsd ymm3, ymm1, ymm2
  0112  vmovups [rdi+rbx*4+0x40], ymm3
  0118  vmovups ymm1, [rdx+rbx*4+0x60]
  011e  vmovups ymm2, [rsi+rbx*4+0x60]
  0124  vpmulld ymm3, ymm1, ymm2
  0129  vpaddd ymm1, ymm3, ymm0
  012d  vpmaxsd ymm3, ymm1, ymm2
  0132  vmovups [rdi+rbx*4+0x60], ymm3
  0138  add rbx, 0x20
  013c  cmp rbx, r14
  013f  jle 0xbb
  0145  lea r14, [r15-8]
  0149  cmp rbx, r14
  014c  jg short 0x174
  014e  vmovups ymm1, [rdx+rbx*4]
  0153  vmovups ymm2, [rsi+rbx*4]
  0158  vpmulld ymm3, ymm1, ymm2
  015d  vpaddd ymm1, ymm3, ymm0
  0161  vpmaxsd ymm3, ymm1, ymm2
  0166  vmovups [rdi+rbx*4], ymm3
  016b  add rbx, 8
  016f  cmp rbx, r14
  0172  jle short 0x14e
  0174  cmp rbx, r15
  0177  jge short 0x1af
  0179  mov rcx, r15
  017c  sub rcx, rbx
  017f  lea rax, [0x1c5]
  0186  neg rcx
  0189  vmovdqu ymm15, [rax+rcx*4+0x20]
  018f  vmaskmovps ymm1, ymm15, [rdx+rbx*4]
  0195  vmaskmovps ymm2, ymm15, [rsi+rbx*4]
  019b  vpmulld ymm3, ymm1, ymm2
  01a0  vpaddd ymm1, ymm3, ymm0
  01a4  vpmaxsd ymm3, ymm1, ymm2
  01a9  vmaskmovps [rdi+rbx*4], ymm15, ymm3
  01af  mov rsp, [rsp]
  01b3  pop r15
  01b5  pop r14
  01b7  pop r13
  01b9  pop r12
  01bb  pop rbp
  01bc  pop rbx
  01bd  vzeroupper
  01c0  ret
  constants (68 bytes):
    00000003 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff
    ffffffff 00000000 00000000 00000000 00000000 00000000 00000000 00000000
    00000000
