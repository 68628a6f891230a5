AVX-512 loop kernel, 353 bytes of machine code, 0 micro-kernel calls per tile, 1 values held in registers:
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
  0041  jle 0x14b
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
  007c  vbroadcastss zmm0, [0x15d]
  0086  mov r15, [rsp+0x18]
  008b  xor rbx, rbx
  008e  lea r14, [r15-0x40]
  0092  cmp rbx, r14
  0095  jg short 0xf6
  0097  vmovups zmm1, [rdx+rbx*4]
  009e  vmulps zmm2, zmm1, zmm0
  00a4  vmovups [rsi+rbx*4], zmm2
  00ab  vmovups zmm1, [rdx+rbx*4+0x40]
  00b3  vmulps zmm2, zmm1, zmm0
  00b9  vmovups [rsi+rbx*4+0x40], zmm2
  00c1  vmovups zmm1, [rdx+rbx*4+0x80]
  00c9  vmulps zmm2, zmm1, zmm0
  00cf  vmovups [rsi+rbx*4+0x80], zmm2
  00d7  vmovups zmm1, [rdx+rbx*4+0xc0]
  00df  vmulps zmm2, zmm1, zmm0
  00e5  vmovups [rsi+rbx*4+0xc0], zmm2
  00ed  add rbx, 0x40
  00f1  cmp rbx, r14
  00f4  jle short 0x97
  00f6  lea r14, [r15-0x10]
  00fa  cmp rbx, r14
  00fd  jg short 0x11c
  00ff  vmovups zmm1, [rdx+rbx*4]
  0106  vmulps zmm2, zmm1, zmm0
  010c  vmovups [rsi+rbx*4], zmm2
  0113  add rbx, 0x10
  0117  cmp rbx, r14
  011a  jle short 0xff
  011c  cmp rbx, r15
  011f  jge short 0x14b
  0121  mov rcx, r15
  0124  sub rcx, rbx
  0127  mov eax, 1
  012c  shl eax, cl
  012e  sub eax, 1
  0133  kmovw k1, eax
  0137  vmovups zmm1{k1}{z}, [rdx+rbx*4]
  013e  vmulps zmm2, zmm1, zmm0
  0144  vmovups [rsi+rbx*4]{k1}, zmm2
  014b  mov rsp, [rsp]
  014f  pop r15
  0151  pop r14
  0153  pop r13
  0155  pop r12
  0157  pop rbp
  0158  pop rbx
  0159  vzeroupper
  015c  ret
  constants (4 bytes):
    3f000000

AVX-512 loop kernel, 717 bytes of machine code, 0 micro-kernel calls per tile, 3 values held in registers, 1024 bytes ahead prefetched for 2 accesses:
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
  0040  mov rax, [rdi+0x18]
  0044  mov [rsp+0x48], rax
  0049  mov rax, [rsp+8]
  004e  cmp rax, [rsp+0x10]
  0053  jge 0x2b7
  0059  mov [rsp+0x70], rax
  005e  mov rax, 0x400
  0068  mov [rsp+0x18], rax
  006d  mov rcx, [rsp+0x30]
  0072  mov rax, [rsp+0x70]
  0077  imul rax, 0x1000
  007e  add rcx, rax
  0081  mov [rsp+0x50], rcx
  0086  mov rcx, [rsp+0x38]
  008b  mov rax, [rsp+0x70]
  0090  imul rax, 4
  0094  add rcx, rax
  0097  mov [rsp+0x58], rcx
  009c  mov rcx, [rsp+0x40]
  00a1  mov rax, [rsp+0x70]
  00a6  imul rax, 4
  00aa  add rcx, rax
  00ad  mov [rsp+0x60], rcx
  00b2  mov rcx, [rsp+0x48]
  00b7  mov rax, [rsp+0x70]
  00bc  imul rax, 0x1000
  00c3  add rcx, rax
  00c6  mov [rsp+0x68], rcx
  00cb  mov rdx, [rsp+0x50]
  00d0  mov rsi, [rsp+0x58]
  00d5  mov rdi, [rsp+0x60]
  00da  mov r8, [rsp+0x68]
  00df  vbroadcastss zmm0, [0x2c9]
  00e9  vbroadcastss zmm1, [rsi]
  00ef  vbroadcastss zmm2, [rdi]
  00f5  mov r15, [rsp+0x18]
  00fa  xor rbx, rbx
  00fd  lea r14, [r15-0x40]
  0101  cmp rbx, r14
  0104  jg 0x215
  010a  vmovups zmm3, [rdx+rbx*4]
  0111  vmulps zmm4, zmm3, zmm1
  0117  vmaxps zmm3, zmm4, zmm2
  011d  vcmpunordps k7, zmm4, zmm4
  0124  vmovaps zmm3{k7}, zmm4
  012a  vsubps zmm4, zmm3, zmm0
  0130  vmovups [r8+rbx*4], zmm4
  0137  vmovups zmm3, [rdx+rbx*4+0x40]
  013f  vmulps zmm4, zmm3, zmm1
  0145  vmaxps zmm3, zmm4, zmm2
  014b  vcmpunordps k7, zmm4, zmm4
  0152  vmovaps zmm3{k7}, zmm4
  0158  vsubps zmm4, zmm3, zmm0
  015e  vmovups [r8+rbx*4+0x40], zmm4
  0166  vmovups zmm3, [rdx+rbx*4+0x80]
  016e  vmulps zmm4, zmm3, zmm1
  0174  vmaxps zmm3, zmm4, zmm2
  017a  vcmpunordps k7, zmm4, zmm4
  0181  vmovaps zmm3{k7}, zmm4
  0187  vsubps zmm4, zmm3, zmm0
  018d  vmovups [r8+rbx*4+0x80], zmm4
  0195  vmovups zmm3, [rdx+rbx*4+0xc0]
  019d  vmulps zmm4, zmm3, zmm1
  01a3  vmaxps zmm3, zmm4, zmm2
  01a9  vcmpunordps k7, zmm4, zmm4
  01b0  vmovaps zmm3{k7}, zmm4
  01b6  vsubps zmm4, zmm3, zmm0
  01bc  vmovups [r8+rbx*4+0xc0], zmm4
  01c4  prefetcht0 [rdx+rbx*4+0x400]
  01cc  prefetcht0 [rdx+rbx*4+0x440]
  01d4  prefetcht0 [rdx+rbx*4+0x480]
  01dc  prefetcht0 [rdx+rbx*4+0x4c0]
  01e4  prefetchw [r8+rbx*4+0x400]
  01ed  prefetchw [r8+rbx*4+0x440]
  01f6  prefetchw [r8+rbx*4+0x480]
  01ff  prefetchw [r8+rbx*4+0x4c0]
  0208  add rbx, 0x40
  020c  cmp rbx, r14
  020f  jle 0x10a
  0215  lea r14, [r15-0x10]
  0219  cmp rbx, r14
  021c  jg short 0x254
  021e  vmovups zmm3, [rdx+rbx*4]
  0225  vmulps zmm4, zmm3, zmm1
  022b  vmaxps zmm3, zmm4, zmm2
  0231  vcmpunordps k7, zmm4, zmm4
  0238  vmovaps zmm3{k7}, zmm4
  023e  vsubps zmm4, zmm3, zmm0
  0244  vmovups [r8+rbx*4], zmm4
  024b  add rbx, 0x10
  024f  cmp rbx, r14
  0252  jle short 0x21e
  0254  cmp rbx, r15
  0257  jge short 0x29c
  0259  mov rcx, r15
  025c  sub rcx, rbx
  025f  mov eax, 1
  0264  shl eax, cl
  0266  sub eax, 1
  026b  kmovw k1, eax
  026f  vmovups zmm3{k1}{z}, [rdx+rbx*4]
  0276  vmulps zmm4, zmm3, zmm1
  027c  vmaxps zmm3, zmm4, zmm2
  0282  vcmpunordps k7, zmm4, zmm4
  0289  vmovaps zmm3{k7}, zmm4
  028f  vsubps zmm4, zmm3, zmm0
  0295  vmovups [r8+rbx*4]{k1}, zmm4
  029c  mov rax, [rsp+0x70]
  02a1  add rax, 1
  02a7  mov [rsp+0x70], rax
  02ac  cmp rax, [rsp+0x10]
  02b1  jl 0x6d
  02b7  mov rsp, [rsp]
  02bb  pop r15
  02bd  pop r14
  02bf  pop r13
  02c1  pop r12
  02c3  pop rbp
  02c4  pop rbx
  02c5  vzeroupper
  02c8  ret
  constants (4 bytes):
    3f800000
