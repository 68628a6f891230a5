AVX-512 loop kernel (i32 lanes), 511 bytes of machine code, 0 micro-kernel calls per tile, 1 values held in registers:
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
  009d  vbroadcastss zmm0, [0x1fb]
  00a7  mov r15, [rsp+0x18]
  00ac  xor rbx, rbx
  00af  lea r14, [r15-0x40]
  00b3  cmp rbx, r14
  00b6  jg 0x16e
  00bc  vmovups zmm1, [rdx+rbx*4]
  00c3  vmovups zmm2, [rsi+rbx*4]
  00ca  vpmulld zmm3, zmm1, zmm2
  00d0  vpaddd zmm1, zmm3, zmm0
  00d6  vpmaxsd zmm3, zmm1, zmm2
  00dc  vmovups [rdi+rbx*4], zmm3
  00e3  vmovups zmm1, [rdx+rbx*4+0x40]
  00eb  vmovups zmm2, [rsi+rbx*4+0x40]
  00f3  vpmulld zmm3, zmm1, zmm2
  00f9  vpaddd zmm1, zmm3, zmm0
  00ff  vpmaxsd zmm3, zmm1, zmm2
  0105  vmovups [rdi+rbx*4+0x40], zmm3
  010d  vmovups zmm1, [rdx+rbx*4+0x80]
  0115  vmovups zmm2, [rsi+rbx*4+0x80]
  011d  vpmulld zmm3, zmm1, zmm2
  0123  vpaddd zmm1, zmm3, zmm0
  0129  vpmaxsd zmm3, zmm1, zmm2
  012f  vmovups [rdi+rbx*4+0x80], zmm3
  0137  vmovups zmm1, [rdx+rbx*4+0xc0]
  013f  vmovups zmm2, [rsi+rbx*4+0xc0]
  0147  vpmulld zmm3, zmm1, zmm2
  014d  vpaddd zmm1, zmm3, zmm0
  0153  vpmaxsd zmm3, zmm1, zmm2
  0159  vmovups [rdi+rbx*4+0xc0], zmm3
  0161  add rbx, 0x40
  0165  cmp rbx, r14
  0168  jle 0xbc
  016e  lea r14, [r15-0x10]
  0172  cmp rbx, r14
  0175  jg short 0x1a7
  0177  vmovups zmm1, [rdx+rbx*4]
  017e  vmovups zmm2, [rsi+rbx*4]
  0185  vpmulld zmm3, zmm1, zmm2
  018b  vpaddd zmm1, zmm3, zmm0
  0191  vpmaxsd zmm3, zmm1, zmm2
  0197  vmovups [rdi+rbx*4], zmm3
  019e  add rbx, 0x10
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
  01c2  vmovups zmm1{k1}{z}, [rdx+rbx*4]
  01c9  vmovups zmm2{k1}{z}, [rsi+rbx*4]
  01d0  vpmulld zmm3, zmm1, zmm2
  01d6  vpaddd zmm1, zmm3, zmm0
  01dc  vpmaxsd zmm3, zmm1, zmm2
  01e2  vmovups [rdi+rbx*4]{k1}, zmm3
  01e9  mov rsp, [rsp]
  01ed  pop r15
  01ef  pop r14
  01f1  pop r13
  01f3  pop r12
  01f5  pop rbp
  01f6  pop rbx
  01f7  vzeroupper
  01fa  ret
  constants (4 bytes):
    00000003
