AVX-512 loop kernel, 2011 bytes of machine code, 0 micro-kernel calls per tile, 4 values held in registers:
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
  0041  jle 0x789
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
  007c  vbroadcastss zmm0, [0x79b]
  0086  vbroadcastss zmm1, [0x79f]
  0090  vbroadcastss zmm2, [0x7a3]
  009a  vbroadcastss zmm3, [0x7a7]
  00a4  mov r15, [rsp+0x18]
  00a9  xor rbx, rbx
  00ac  lea r14, [r15-0x40]
  00b0  cmp rbx, r14
  00b3  jg 0x524
  00b9  vmovups zmm4, [rdx+rbx*4]
  00c0  vmulps zmm5, zmm0, zmm4
  00c6  vmulps zmm6, zmm1, zmm4
  00cc  vmulps zmm7, zmm6, zmm4
  00d2  vmulps zmm6, zmm7, zmm4
  00d8  vaddps zmm7, zmm4, zmm6
  00de  vmulps zmm6, zmm2, zmm7
  00e4  vbroadcastss zmm7, [0x7ab]
  00ee  vminps zmm4, zmm7, zmm6
  00f4  vbroadcastss zmm7, [0x7af]
  00fe  vmaxps zmm8, zmm7, zmm4
  0104  vmulps zmm4, zmm8, zmm8
  010a  vbroadcastss zmm7, [0x7b3]
  0114  vbroadcastss zmm9, [0x7b7]
  011e  vfmadd213ps zmm7, zmm4, zmm9
  0124  vbroadcastss zmm9, [0x7bb]
  012e  vfmadd213ps zmm7, zmm4, zmm9
  0134  vbroadcastss zmm9, [0x7bf]
  013e  vfmadd213ps zmm7, zmm4, zmm9
  0144  vbroadcastss zmm9, [0x7c3]
  014e  vfmadd213ps zmm7, zmm4, zmm9
  0154  vbroadcastss zmm9, [0x7c7]
  015e  vfmadd213ps zmm7, zmm4, zmm9
  0164  vmulps zmm9, zmm8, zmm4
  016a  vfmadd213ps zmm9, zmm7, zmm8
  0170  vbroadcastss zmm8, [0x7cb]
  017a  vbroadcastss zmm7, [0x7cf]
  0184  vfmadd213ps zmm8, zmm4, zmm7
  018a  vbroadcastss zmm7, [0x7d3]
  0194  vfmadd213ps zmm8, zmm4, zmm7
  019a  vfmadd213ps zmm8, zmm4, zmm3
  01a0  vdivps zmm4, zmm9, zmm8
  01a6  vminps zmm8, zmm3, zmm4
  01ac  vbroadcastss zmm4, [0x7d7]
  01b6  vmaxps zmm9, zmm4, zmm8
  01bc  vaddps zmm6, zmm3, zmm9
  01c2  vmulps zmm9, zmm5, zmm6
  01c8  vmovups [rsi+rbx*4], zmm9
  01cf  vmovups zmm4, [rdx+rbx*4+0x40]
  01d7  vmulps zmm5, zmm0, zmm4
  01dd  vmulps zmm6, zmm1, zmm4
  01e3  vmulps zmm7, zmm6, zmm4
  01e9  vmulps zmm6, zmm7, zmm4
  01ef  vaddps zmm7, zmm4, zmm6
  01f5  vmulps zmm6, zmm2, zmm7
  01fb  vbroadcastss zmm7, [0x7ab]
  0205  vminps zmm4, zmm7, zmm6
  020b  vbroadcastss zmm7, [0x7af]
  0215  vmaxps zmm8, zmm7, zmm4
  021b  vmulps zmm4, zmm8, zmm8
  0221  vbroadcastss zmm7, [0x7b3]
  022b  vbroadcastss zmm9, [0x7b7]
  0235  vfmadd213ps zmm7, zmm4, zmm9
  023b  vbroadcastss zmm9, [0x7bb]
  0245  vfmadd213ps zmm7, zmm4, zmm9
  024b  vbroadcastss zmm9, [0x7bf]
  0255  vfmadd213ps zmm7, zmm4, zmm9
  025b  vbroadcastss zmm9, [0x7c3]
  0265  vfmadd213ps zmm7, zmm4, zmm9
  026b  vbroadcastss zmm9, [0x7c7]
  0275  vfmadd213ps zmm7, zmm4, zmm9
  027b  vmulps zmm9, zmm8, zmm4
  0281  vfmadd213ps zmm9, zmm7, zmm8
  0287  vbroadcastss zmm8, [0x7cb]
  0291  vbroadcastss zmm7, [0x7cf]
  029b  vfmadd213ps zmm8, zmm4, zmm7
  02a1  vbroadcastss zmm7, [0x7d3]
  02ab  vfmadd213ps zmm8, zmm4, zmm7
  02b1  vfmadd213ps zmm8, zmm4, zmm3
  02b7  vdivps zmm4, zmm9, zmm8
  02bd  vminps zmm8, zmm3, zmm4
  02c3  vbroadcastss zmm4, [0x7d7]
  02cd  vmaxps zmm9, zmm4, zmm8
  02d3  vaddps zmm6, zmm3, zmm9
  02d9  vmulps zmm9, zmm5, zmm6
  02df  vmovups [rsi+rbx*4+0x40], zmm9
  02e7  vmovups zmm4, [rdx+rbx*4+0x80]
  02ef  vmulps zmm5, zmm0, zmm4
  02f5  vmulps zmm6, zmm1, zmm4
  02fb  vmulps zmm7, zmm6, zmm4
  0301  vmulps zmm6, zmm7, zmm4
  0307  vaddps zmm7, zmm4, zmm6
  030d  vmulps zmm6, zmm2, zmm7
  0313  vbroadcastss zmm7, [0x7ab]
  031d  vminps zmm4, zmm7, zmm6
  0323  vbroadcastss zmm7, [0x7af]
  032d  vmaxps zmm8, zmm7, zmm4
  0333  vmulps zmm4, zmm8, zmm8
  0339  vbroadcastss zmm7, [0x7b3]
  0343  vbroadcastss zmm9, [0x7b7]
  034d  vfmadd213ps zmm7, zmm4, zmm9
  0353  vbroadcastss zmm9, [0x7bb]
  035d  vfmadd213ps zmm7, zmm4, zmm9
  0363  vbroadcastss zmm9, [0x7bf]
  036d  vfmadd213ps zmm7, zmm4, zmm9
  0373  vbroadcastss zmm9, [0x7c3]
  037d  vfmadd213ps zmm7, zmm4, zmm9
  0383  vbroadcastss zmm9, [0x7c7]
  038d  vfmadd213ps zmm7, zmm4, zmm9
  0393  vmulps zmm9, zmm8, zmm4
  0399  vfmadd213ps zmm9, zmm7, zmm8
  039f  vbroadcastss zmm8, [0x7cb]
  03a9  vbroadcastss zmm7, [0x7cf]
  03b3  vfmadd213ps zmm8, zmm4, zmm7
  03b9  vbroadcastss zmm7, [0x7d3]
  03c3  vfmadd213ps zmm8, zmm4, zmm7
  03c9  vfmadd213ps zmm8, zmm4, zmm3
  03cf  vdivps zmm4, zmm9, zmm8
  03d5  vminps zmm8, zmm3, zmm4
  03db  vbroadcastss zmm4, [0x7d7]
  03e5  vmaxps zmm9, zmm4, zmm8
  03eb  vaddps zmm6, zmm3, zmm9
  03f1  vmulps zmm9, zmm5, zmm6
  03f7  vmovups [rsi+rbx*4+0x80], zmm9
  03ff  vmovups zmm4, [rdx+rbx*4+0xc0]
  0407  vmulps zmm5, zmm0, zmm4
  040d  vmulps zmm6, zmm1, zmm4
  0413  vmulps zmm7, zmm6, zmm4
  0419  vmulps zmm6, zmm7, zmm4
  041f  vaddps zmm7, zmm4, zmm6
  0425  vmulps zmm6, zmm2, zmm7
  042b  vbroadcastss zmm7, [0x7ab]
  0435  vminps zmm4, zmm7, zmm6
  043b  vbroadcastss zmm7, [0x7af]
  0445  vmaxps zmm8, zmm7, zmm4
  044b  vmulps zmm4, zmm8, zmm8
  0451  vbroadcastss zmm7, [0x7b3]
  045b  vbroadcastss zmm9, [0x7b7]
  0465  vfmadd213ps zmm7, zmm4, zmm9
  046b  vbroadcastss zmm9, [0x7bb]
  0475  vfmadd213ps zmm7, zmm4, zmm9
  047b  vbroadcastss zmm9, [0x7bf]
  0485  vfmadd213ps zmm7, zmm4, zmm9
  048b  vbroadcastss zmm9, [0x7c3]
  0495  vfmadd213ps zmm7, zmm4, zmm9
  049b  vbroadcastss zmm9, [0x7c7]
  04a5  vfmadd213ps zmm7, zmm4, zmm9
  04ab  vmulps zmm9, zmm8, zmm4
  04b1  vfmadd213ps zmm9, zmm7, zmm8
  04b7  vbroadcastss zmm8, [0x7cb]
  04c1  vbroadcastss zmm7, [0x7cf]
  04cb  vfmadd213ps zmm8, zmm4, zmm7
  04d1  vbroadcastss zmm7, [0x7d3]
  04db  vfmadd213ps zmm8, zmm4, zmm7
  04e1  vfmadd213ps zmm8, zmm4, zmm3
  04e7  vdivps zmm4, zmm9, zmm8
  04ed  vminps zmm8, zmm3, zmm4
  04f3  vbroadcastss zmm4, [0x7d7]
  04fd  vmaxps zmm9, zmm4, zmm8
  0503  vaddps zmm6, zmm3, zmm9
  0509  vmulps zmm9, zmm5, zmm6
  050f  vmovups [rsi+rbx*4+0xc0], zmm9
  0517  add rbx, 0x40
  051b  cmp rbx, r14
  051e  jle 0xb9
  0524  lea r14, [r15-0x10]
  0528  cmp rbx, r14
  052b  jg 0x654
  0531  vmovups zmm4, [rdx+rbx*4]
  0538  vmulps zmm5, zmm0, zmm4
  053e  vmulps zmm6, zmm1, zmm4
  0544  vmulps zmm7, zmm6, zmm4
  054a  vmulps zmm6, zmm7, zmm4
  0550  vaddps zmm7, zmm4, zmm6
  0556  vmulps zmm6, zmm2, zmm7
  055c  vbroadcastss zmm7, [0x7ab]
  0566  vminps zmm4, zmm7, zmm6
  056c  vbroadcastss zmm7, [0x7af]
  0576  vmaxps zmm8, zmm7, zmm4
  057c  vmulps zmm4, zmm8, zmm8
  0582  vbroadcastss zmm7, [0x7b3]
  058c  vbroadcastss zmm9, [0x7b7]
  0596  vfmadd213ps zmm7, zmm4, zmm9
  059c  vbroadcastss zmm9, [0x7bb]
  05a6  vfmadd213ps zmm7, zmm4, zmm9
  05ac  vbroadcastss zmm9, [0x7bf]
  05b6  vfmadd213ps zmm7, zmm4, zmm9
  05bc  vbroadcastss zmm9, [0x7c3]
  05c6  vfmadd213ps zmm7, zmm4, zmm9
  05cc  vbroadcastss zmm9, [0x7c7]
  05d6  vfmadd213ps zmm7, zmm4, zmm9
  05dc  vmulps zmm9, zmm8, zmm4
  05e2  vfmadd213ps zmm9, zmm7, zmm8
  05e8  vbroadcastss zmm8, [0x7cb]
  05f2  vbroadcastss zmm7, [0x7cf]
  05fc  vfmadd213ps zmm8, zmm4, zmm7
  0602  vbroadcastss zmm7, [0x7d3]
  060c  vfmadd213ps zmm8, zmm4, zmm7
  0612  vfmadd213ps zmm8, zmm4, zmm3
  0618  vdivps zmm4, zmm9, zmm8
  061e  vminps zmm8, zmm3, zmm4
  0624  vbroadcastss zmm4, [0x7d7]
  062e  vmaxps zmm9, zmm4, zmm8
  0634  vaddps zmm6, zmm3, zmm9
  063a  vmulps zmm9, zmm5, zmm6
  0640  vmovups [rsi+rbx*4], zmm9
  0647  add rbx, 0x10
  064b  cmp rbx, r14
  064e  jle 0x531
  0654  cmp rbx, r15
  0657  jge 0x789
  065d  mov rcx, r15
  0660  sub rcx, rbx
  0663  mov eax, 1
  0668  shl eax, cl
  066a  sub eax, 1
  066f  kmovw k1, eax
  0673  vmovups zmm4{k1}{z}, [rdx+rbx*4]
  067a  vmulps zmm5, zmm0, zmm4
  0680  vmulps zmm6, zmm1, zmm4
  0686  vmulps zmm7, zmm6, zmm4
  068c  vmulps zmm6, zmm7, zmm4
  0692  vaddps zmm7, zmm4, zmm6
  0698  vmulps zmm6, zmm2, zmm7
  069e  vbroadcastss zmm7, [0x7ab]
  06a8  vminps zmm4, zmm7, zmm6
  06ae  vbroadcastss zmm7, [0x7af]
  06b8  vmaxps zmm8, zmm7, zmm4
  06be  vmulps zmm4, zmm8, zmm8
  06c4  vbroadcastss zmm7, [0x7b3]
  06ce  vbroadcastss zmm9, [0x7b7]
  06d8  vfmadd213ps zmm7, zmm4, zmm9
  06de  vbroadcastss zmm9, [0x7bb]
  06e8  vfmadd213ps zmm7, zmm4, zmm9
  06ee  vbroadcastss zmm9, [0x7bf]
  06f8  vfmadd213ps zmm7, zmm4, zmm9
  06fe  vbroadcastss zmm9, [0x7c3]
  0708  vfmadd213ps zmm7, zmm4, zmm9
  070e  vbroadcastss zmm9, [0x7c7]
  0718  vfmadd213ps zmm7, zmm4, zmm9
  071e  vmulps zmm9, zmm8, zmm4
  0724  vfmadd213ps zmm9, zmm7, zmm8
  072a  vbroadcastss zmm8, [0x7cb]
  0734  vbroadcastss zmm7, [0x7cf]
  073e  vfmadd213ps zmm8, zmm4, zmm7
  0744  vbroadcastss zmm7, [0x7d3]
  074e  vfmadd213ps zmm8, zmm4, zmm7
  0754  vfmadd213ps zmm8, zmm4, zmm3
  075a  vdivps zmm4, zmm9, zmm8
  0760  vminps zmm8, zmm3, zmm4
  0766  vbroadcastss zmm4, [0x7d7]
  0770  vmaxps zmm9, zmm4, zmm8
  0776  vaddps zmm6, zmm3, zmm9
  077c  vmulps zmm9, zmm5, zmm6
  0782  vmovups [rsi+rbx*4]{k1}, zmm9
  0789  mov rsp, [rsp]
  078d  pop r15
  078f  pop r14
  0791  pop r13
  0793  pop r12
  0795  pop rbp
  0796  pop rbx
  0797  vzeroupper
  079a  ret
  constants (64 bytes):
    3f000000 3d372713 3f4c422a 3f800000 4111999a c111999a a9bae463 2e65160a
    b2ac9512 373a9e86 3b4b3c5a 3e05f46f 3985457b 3cc892ce 3eeda4e1 bf800000
