AVX2 loop kernel (f64 lanes), 505 bytes of machine code, 0 micro-kernel calls per tile, 1 values held in registers:
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
  004a  jle 0x19f
  0050  mov [rsp+0x18], rax
  0055  mov rcx, [rsp+0x30]
  005a  mov rax, [rsp+8]
  005f  lea rcx, [rcx+rax*8]
  0063  mov [rsp+0x48], rcx
  0068  mov rcx, [rsp+0x38]
  006d  mov rax, [rsp+8]
  0072  lea rcx, [rcx+rax*8]
  0076  mov [rsp+0x50], rcx
  007b  mov rcx, [rsp+0x40]
  0080  mov rax, [rsp+8]
  0085  lea rcx, [rcx+rax*8]
  0089  mov [rsp+0x58], rcx
  008e  mov rdx, [rsp+0x48]
  0093  mov rsi, [rsp+0x50]
  0098  mov rdi, [rsp+0x58]
  009d  vbroadcastsd ymm0, [0x1b1]
  00a6  mov r15, [rsp+0x18]
  00ab  xor rbx, rbx
  00ae  lea r14, [r15-0x10]
  00b2  cmp rbx, r14
  00b5  jg 0x139
  00bb  vmovups ymm1, [rdx+rbx*8]
  00c0  vmulpd ymm2, ymm1, ymm0
  00c4  vmovups ymm1, [rsi+rbx*8]
  00c9  vaddpd ymm3, ymm2, ymm1
  00cd  vsqrtpd ymm1, ymm3
  00d1  vmovups [rdi+rbx*8], ymm1
  00d6  vmovups ymm1, [rdx+rbx*8+0x20]
  00dc  vmulpd ymm2, ymm1, ymm0
  00e0  vmovups ymm1, [rsi+rbx*8+0x20]
  00e6  vaddpd ymm3, ymm2, ymm1
  00ea  vsqrtpd ymm1, ymm3
  00ee  vmovups [rdi+rbx*8+0x20], ymm1
  00f4  vmovups ymm1, [rdx+rbx*8+0x40]
  00fa  vmulpd ymm2, ymm1, ymm0
  00fe  vmovups ymm1, [rsi+rbx*8+0x40]
  0104  vaddpd ymm3, ymm2, ymm1
  0108  vsqrtpd ymm1, ymm3
  010c  vmovups [rdi+rbx*8+0x40], ymm1
  0112  vmovups ymm1, [rdx+rbx*8+0x60]
  0118  vmulpd ymm2, ymm1, ymm0
  011c  vmovups ymm1, [rsi+rbx*8+0x60]
  0122  vaddpd ymm3, ymm2, ymm1
  0126  vsqrtpd ymm1, ymm3
  012a  vmovups [rdi+rbx*8+0x60], ymm1
  0130  add rbx, 0x10
  0134  cmp rbx, r14
  0137  jle short 0xbb
  0139  lea r14, [r15-4]
  013d  cmp rbx, r14
  0140  jg short 0x166
  0142  vmovups ymm1, [rdx+rbx*8]
  0147  vmulpd ymm2, ymm1, ymm0
  014b  vmovups ymm1, [rsi+rbx*8]
  0150  vaddpd ymm3, ymm2, ymm1
  0154  vsqrtpd ymm1, ymm3
  0158  vmovups [rdi+rbx*8], ymm1
  015d  add rbx, 4
  0161  cmp rbx, r14
  0164  jle short 0x142
  0166  cmp rbx, r15
  0169  jge short 0x19f
  016b  mov rcx, r15
  016e  sub rcx, rbx
  0171  lea rax, [0x1b9]
  0178  neg rcx
  017b  vmovdqu ymm15, [rax+rcx*8+0x20]
  0181  vmaskmovpd ymm1, ymm15, [rdx+rbx*8]
  0187  vmulpd ymm2, ymm1, ymm0
  018b  vmaskmovpd ymm1, ymm15, [rsi+rbx*8]
  0191  vaddpd ymm3, ymm2, ymm1
  0195  vsqrtpd ymm1, ymm3
  0199  vmaskmovpd [rdi+rbx*8], ymm15, ymm1
  019f  mov rsp, [rsp]
  01a3  pop r15
  01a5  pop r14
  01a7  pop r13
  01a9  pop r12
  01ab  pop rbp
  01ac  pop rbx
  01ad  vzeroupper
  01b0  ret
  constants (72 bytes):
    4000000000000000 ffffffffffffffff ffffffffffffffff ffffffffffffffff ffffffffffffffff 0000000000000000 0000000000000000 0000000000000000
    0000000000000000
