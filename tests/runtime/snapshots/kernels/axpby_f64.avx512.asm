AVX-512 loop kernel (f64 lanes), 515 bytes of machine code, 0 micro-kernel calls per tile, 1 values held in registers:
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
  004a  jle 0x1e9
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
  009d  vbroadcastsd zmm0, [0x1fb]
  00a7  mov r15, [rsp+0x18]
  00ac  xor rbx, rbx
  00af  lea r14, [r15-0x20]
  00b3  cmp rbx, r14
  00b6  jg 0x16e
  00bc  vmovups zmm1, [rdx+rbx*8]
  00c3  vmulpd zmm2, zmm1, zmm0
  00c9  vmovups zmm1, [rsi+rbx*8]
  00d0  vaddpd zmm3, zmm2, zmm1
  00d6  vsqrtpd zmm1, zmm3
  00dc  vmovups [rdi+rbx*8], zmm1
  00e3  vmovups zmm1, [rdx+rbx*8+0x40]
  00eb  vmulpd zmm2, zmm1, zmm0
  00f1  vmovups zmm1, [rsi+rbx*8+0x40]
  00f9  vaddpd zmm3, zmm2, zmm1
  00ff  vsqrtpd zmm1, zmm3
  0105  vmovups [rdi+rbx*8+0x40], zmm1
  010d  vmovups zmm1, [rdx+rbx*8+0x80]
  0115  vmulpd zmm2, zmm1, zmm0
  011b  vmovups zmm1, [rsi+rbx*8+0x80]
  0123  vaddpd zmm3, zmm2, zmm1
  0129  vsqrtpd zmm1, zmm3
  012f  vmovups [rdi+rbx*8+0x80], zmm1
  0137  vmovups zmm1, [rdx+rbx*8+0xc0]
  013f  vmulpd zmm2, zmm1, zmm0
  0145  vmovups zmm1, [rsi+rbx*8+0xc0]
  014d  vaddpd zmm3, zmm2, zmm1
  0153  vsqrtpd zmm1, zmm3
  0159  vmovups [rdi+rbx*8+0xc0], zmm1
  0161  add rbx, 0x20
  0165  cmp rbx, r14
  0168  jle 0xbc
  016e  lea r14, [r15-8]
  0172  cmp rbx, r14
  0175  jg short 0x1a7
  0177  vmovups zmm1, [rdx+rbx*8]
  017e  vmulpd zmm2, zmm1, zmm0
  0184  vmovups zmm1, [rsi+rbx*8]
  018b  vaddpd zmm3, zmm2, zmm1
  0191  vsqrtpd zmm1, zmm3
  0197  vmovups [rdi+rbx*8], zmm1
  019e  add rbx, 8
  01a2  cmp rbx, r14
  01a5  jle short 0x177
  01a7  cmp rbx, r15
  01aa  jge short 0x1e9
  01ac  mov rcx, r15
  01af  sub rcx, rbx
  01b2  mov eax, 1
  01b7  shl eax, cl
  01b9  sub eax, 1
  01be  kmovw k1, eax
  01c2  vmovupd zmm1{k1}{z}, [rdx+rbx*8]
  01c9  vmulpd zmm2, zmm1, zmm0
  01cf  vmovupd zmm1{k1}{z}, [rsi+rbx*8]
  01d6  vaddpd zmm3, zmm2, zmm1
  01dc  vsqrtpd zmm1, zmm3
  01e2  vmovupd [rdi+rbx*8]{k1}, zmm1
  01e9  mov rsp, [rsp]
  01ed  pop r15
  01ef  pop r14
  01f1  pop r13
  01f3  pop r12
  01f5  pop rbp
  01f6  pop rbx
  01f7  vzeroupper
  01fa  ret
  constants (8 bytes):
    4000000000000000
